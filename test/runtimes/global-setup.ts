import { prepareWork } from './work.js'

/** Once per run, before the test files: build, pack and lay out the folder the apps run from (work.ts). */
export default function setup(): void {
  prepareWork()
}
