import { operatorWalk } from './suite.js'

// app.register(fpxConsole, { receiver, authorize, prefix: '/admin/payments' }), beside the fpxCollect plugin.
operatorWalk('fastify')
