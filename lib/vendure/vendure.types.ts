import type { CardDetails } from '../core/api/index.js';
import type { VerifiedState } from './vendure.decision.js';

/** What the storefront asks for: which payment method, where the customer comes back. */
export interface PaymentLinkInput {
  /**
   * An order of the signed-in customer in `ArrangingAdditionalPayment` (modified after it was
   * placed), instead of the active order. Default: the active order.
   */
  orderCode?: string | null;
  /** Code of the PaymentMethod; default: the first enabled one using this plugin's handler. */
  paymentMethodCode?: string | null;
  /** Where the service sends the customer after paying (`?payment_id=` appended). Default: the plugin's `successLink`. */
  successLink?: string | null;
  /** Where the service sends the customer after failing. Default: the plugin's `failLink`. */
  failLink?: string | null;
}

/** The payment link of the active order. */
export interface PaymentLink {
  /** The service's payment id. */
  paymentId: string;
  /** The checkout page to send the customer to. */
  link: string;
  /** The amount asked, in millimes. */
  millimes: string;
}

/** What the customer's return found. */
export interface PaymentReturn {
  /** The service's payment id. */
  paymentId: string;
  /** `confirmed`, `authorized`, `failed`, `expired` or `pending`. */
  outcome: string;
}

/** Metadata the plugin hands `addPaymentToOrder`: what the service verified. @internal */
export interface VerifiedPaymentMetadata {
  /** Marks metadata written by the plugin. */
  nestjsPayments: true;
  /** The service's payment id. */
  paymentId: string;
  /** The verified amount in Vendure minor units. */
  amount: number;
  /** The verified amount in millimes. */
  millimes: string;
  /** Settled (paid) or Authorized (held). */
  state: VerifiedState;
  /** Which path verified it first: webhook, return or reconciliation. */
  source: string;
  /** The card as the service's verify answer showed it (brand, masked number, approval code), when it did. */
  card?: CardDetails;
}
