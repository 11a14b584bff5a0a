/** Value of a hexadecimal digit (either case) by character code, -1 for any other code below 256. */
export const HEX_VALUE = new Int8Array(256).fill(-1)
for (let digit = 0; digit < 16; digit++) {
  HEX_VALUE[digit.toString(16).charCodeAt(0)] = digit
  HEX_VALUE[digit.toString(16).toUpperCase().charCodeAt(0)] = digit
}
