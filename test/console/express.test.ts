import { operatorWalk } from './suite.js'

// app.use('/admin/payments', fpxConsole(receiver, { authorize })), behind the app's own express.urlencoded().
operatorWalk('express')
