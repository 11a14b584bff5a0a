// The npm aliases of the previous major versions ship no types; the APIs used here match the current ones.
declare module 'express4' {
  import express from 'express'
  export default express
}

declare module 'koa2' {
  import Koa from 'koa'
  export default Koa
}
