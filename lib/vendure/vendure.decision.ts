/** What the service verified for a payment of an order: paid, or held (pre-authorization). */
export type VerifiedState = 'Settled' | 'Authorized';

/** Why a verified payment is reported to the merchant instead of being added to its order. */
export type UnexpectedPaymentReason =
  'order-cancelled' | 'order-already-paid' | 'order-not-payable' | 'order-not-found' | 'amount-mismatch';

/** What to do with a verified payment of an order. */
export type SettlementAction =
  /** Add it to the order, in this state (moving the order to ArrangingPayment first if needed). */
  | { kind: 'add'; state: VerifiedState }
  /** The order already records this payment (a retry after a crash): nothing to do. */
  | { kind: 'nothing' }
  /** Keep it off the order; log it and publish `NestjsPaymentsUnexpectedPaymentEvent` (never refunded silently). */
  | { kind: 'report'; reason: UnexpectedPaymentReason };

/** The facts {@link decideSettlement} reads. */
export interface SettlementFacts {
  /** The verified state. */
  verified: VerifiedState;
  /** The order's state, or undefined when no order has the payment's tracking id. */
  orderState: string | undefined;
  /** Whether the order was placed (`orderPlacedAt` set). */
  placed: boolean;
  /** Whether the order already has a payment with this transaction id. */
  recorded: boolean;
}

/** Order states in which a payment is taken. */
const PAYABLE_STATES: ReadonlySet<string> = new Set(['AddingItems', 'ArrangingPayment', 'ArrangingAdditionalPayment']);

/**
 * The rule deciding what a verified payment does to its Vendure order: added once, to an order
 * still awaiting payment; reported, never added nor refunded, for a cancelled order, an order
 * already paid (a second payment), or an order in another state.
 */
export function decideSettlement(facts: SettlementFacts): SettlementAction {
  if (facts.orderState === undefined) return { kind: 'report', reason: 'order-not-found' };
  if (facts.recorded) return { kind: 'nothing' };
  if (facts.orderState === 'Cancelled') return { kind: 'report', reason: 'order-cancelled' };
  if (facts.orderState === 'ArrangingAdditionalPayment') return { kind: 'add', state: facts.verified };
  if (facts.placed) return { kind: 'report', reason: 'order-already-paid' };
  if (PAYABLE_STATES.has(facts.orderState)) return { kind: 'add', state: facts.verified };
  return { kind: 'report', reason: 'order-not-payable' };
}

/**
 * The tracking id of an order's payment: the order's code for its first payment, and the code with
 * what was already paid (`CODE~paid`) for an additional one (ArrangingAdditionalPayment): the
 * plugin confirms one payment per tracking id and reports a later one as a second charge, which an
 * additional payment is not.
 * @param code the order's code
 * @param paid what the order's settled payments already cover, in Vendure's minor units
 */
export function trackingIdOf(code: string, paid: number): string {
  return paid > 0 ? `${code}~${paid}` : code;
}

/** The order code a payment's tracking id names (see {@link trackingIdOf}). */
export function orderCodeOf(trackingId: string | undefined): string | undefined {
  return trackingId?.split('~')[0];
}
