/**
 * `nestjs-payments/desk`: the payments desk, mounted in the merchant's own app behind its own
 * authentication: what needs a person, each payment's page, and the actions (check and run the
 * handlers again, refund a duplicate). `createPaymentsDesk` for Express; `PaymentsDeskModule` for
 * Nest (which loads Nest only when `forRoot` is called). See docs/desk.md.
 */
export { createPaymentsDesk } from './desk.express.js';
export type { PaymentsDeskHandler } from './desk.express.js';
export { PaymentsDeskModule } from './desk.module.js';
export type { DeskGuard, PaymentsDeskDynamicModule, PaymentsDeskModuleOptions } from './desk.module.js';
export type { DeskAuthorization, DeskPrincipal, PaymentsDeskBaseOptions, PaymentsDeskOptions } from './desk.options.js';
