/**
 * `nestjs-payments/medusa`: the service as a Medusa v2 payment module provider
 * (`resolve: 'nestjs-payments/medusa'` in medusa-config). Needs the optional peer dependency
 * `@medusajs/framework` (2.x). See docs/medusa.md.
 */
import { NestjsPaymentsProvider } from './medusa.provider.js';

export { NestjsPaymentsProvider };
/**
 * The provider's services, as Medusa's loader reads a provider module (`ModuleProvider(Modules.PAYMENT,
 * { services })`): one service, `NestjsPaymentsProvider`.
 */
export const services = [NestjsPaymentsProvider];
export type { MedusaPaymentsOptions, MedusaLogger } from './medusa.options.js';
export type { MedusaPaymentData, MedusaCardData, MedusaCaptureRecord, MedusaRefundRecord } from './medusa.data.js';
export type {
  MedusaProviderContext,
  MedusaProviderInput,
  MedusaAmountInput,
  MedusaRefundInput,
  MedusaProviderOutput,
  MedusaWebhookPayload,
  MedusaInitiateResult,
  MedusaStatusResult,
  MedusaSessionResult,
  MedusaAccountHolderRef,
  MedusaCustomerRef,
  MedusaWebhookData,
  MedusaWebhookResult,
  MedusaProviderRecord,
} from './medusa.types.js';
export type { MedusaSessionStatus, MedusaWebhookAction, MedusaOutcome } from './medusa.status.js';
export { medusaOutcomeOf } from './medusa.status.js';
export { millimesOf, dinarsOf, MedusaAmountError, MEDUSA_CURRENCY } from './medusa.money.js';
