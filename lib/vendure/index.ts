// Public API of `nestjs-payments/vendure`: the Vendure 3 plugin (docs/vendure.md).
export { NestjsPaymentsPlugin } from './vendure.plugin.js';
export { NestjsPaymentsUnexpectedPaymentEvent } from './vendure.events.js';
export type { UnexpectedPaymentReason } from './vendure.decision.js';
export { NESTJS_PAYMENTS_HANDLER_CODE, NESTJS_PAYMENTS_WEBHOOK_PATH } from './vendure.options.js';
export type { NestjsPaymentsPluginOptions } from './vendure.options.js';
export { vendureToMillimes, millimesToVendure, amountOwed } from './vendure.money.js';
export type { CoveringPayment, CoveringRefund } from './vendure.money.js';
