/**
 * The sandbox's memory: payments, bindings, and the transitions between payment states.
 * No I/O here, so every rule of the state machine lives in one place and reads top to bottom.
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type {
  SandboxBinding,
  SandboxBindingInput,
  SandboxDestination,
  SandboxPayment,
  SandboxPaymentState,
} from './sandbox.types.js';

/** The service's default session timeout, in seconds (docs/service-facts.md §4). */
export const DEFAULT_SESSION_TIMEOUT_SECS = 1200;

/** Path of the checkout page under the sandbox URL; the documented link's `<merchant_slug>` is fixed. */
export const CHECKOUT_PATH = '/checkout/sandbox-merchant';

/**
 * The card every sandbox customer pays with: the public docs' own example (verify-transaction),
 * so a client's fixtures and the sandbox's answers look alike. Bindings created by paying use it too.
 */
export const SANDBOX_CARD = Object.freeze({
  holder: 'SANDBOX CUSTOMER',
  pan: '450921**1119',
  lastFour: '1119',
  brand: 'VISA',
  /** `YYYYMM`, as in the docs' example. */
  expiration: '202612',
});

/** A validated `generate_payment` request, in camelCase. */
export interface NewPayment {
  /** Millimes, digits without leading zeros. */
  amount: string;
  /** Absolute http(s) URL. */
  successLink: string;
  /** Absolute http(s) URL. */
  failLink: string;
  /** Absolute http(s) URL, kept exactly as received. Default: none (no delivery). */
  webhook?: string;
  /** Any string. Default: none. */
  developerTrackingId?: string;
  /** Positive integer. Default {@link DEFAULT_SESSION_TIMEOUT_SECS}. */
  sessionTimeoutSecs?: number;
  /** Default false, as the service's. */
  acceptCard?: boolean;
  /** Absolute http(s) URL. Default: none. */
  imageUrl?: string;
  /** Paying holds the amount instead of taking it. Default false. */
  preAuthorization?: boolean;
  /** Customer id: paying creates a binding. Default: none. */
  clientId?: string;
  /** Split of the amount. Default: none. */
  destinations?: SandboxDestination[];
}

/** A pre-authorization already held, as `createPreauthorizedPayment` makes it. */
export interface NewPreauthorization {
  /** Millimes, digits without leading zeros. */
  amount: string;
  /** Any string. Default: none. */
  developerTrackingId?: string;
  /** Customer id: a binding is created. Default: none. */
  clientId?: string;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A payment as the sandbox keeps it (a state file holds these). */
export interface PaymentRecord extends Mutable<SandboxPayment> {
  /** Epoch ms after which a pending payment is expired; kept numeric to compare with the clock. */
  expiresAtMs?: number;
}

/** What can end a pending payment: the customer paying or declining, or the session ending. */
export type Settlement = 'paid' | 'failed' | 'expired';

/** Why confirm_payment is refused: nothing held to capture, or more asked than held. */
export type CaptureRefusal = 'not_allowed' | 'exceeds';

function randomId(prefix: string): string {
  // 12 random bytes: unguessable and URL-safe once hex-encoded.
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** In-memory store and state machine of the sandbox. */
export class SandboxState {
  // Protected for the state file (sandbox.persist.ts), which saves and restores them as they are.
  protected readonly paymentsById = new Map<string, PaymentRecord>();
  protected readonly bindingsByClient = new Map<string, SandboxBinding[]>();
  protected orderCounter = 0;

  /**
   * @param now the sandbox clock, epoch ms
   * @param baseUrl returns the sandbox URL (known only once the server listens)
   */
  constructor(
    private readonly now: () => number,
    private readonly baseUrl: () => string,
  ) {}

  private isoNow(): string {
    return new Date(this.now()).toISOString();
  }

  private nextOrderNumber(): string {
    this.orderCounter += 1;
    return String(100000 + this.orderCounter);
  }

  /** Creates a pending payment (standard, or a pre-authorization to be held by paying). */
  createPayment(input: NewPayment): SandboxPayment {
    const paymentId = randomId('pay');
    const createdAtMs = this.now();
    const sessionTimeoutSecs = input.sessionTimeoutSecs ?? DEFAULT_SESSION_TIMEOUT_SECS;
    const expiresAtMs = createdAtMs + sessionTimeoutSecs * 1000;
    const record: PaymentRecord = {
      paymentId,
      kind: input.preAuthorization ? 'preauthorized' : 'standard',
      state: 'pending',
      amount: input.amount,
      successLink: input.successLink,
      failLink: input.failLink,
      acceptCard: input.acceptCard ?? false,
      sessionTimeoutSecs,
      link: `${this.baseUrl()}${CHECKOUT_PATH}/${paymentId}`,
      orderNumber: this.nextOrderNumber(),
      createdAt: new Date(createdAtMs).toISOString(),
      expiresAt: new Date(expiresAtMs).toISOString(),
      expiresAtMs,
    };
    if (input.developerTrackingId !== undefined) record.developerTrackingId = input.developerTrackingId;
    if (input.clientId !== undefined) record.clientId = input.clientId;
    if (input.destinations !== undefined) record.destinations = Object.freeze([...input.destinations]);
    if (input.webhook !== undefined) record.webhook = input.webhook;
    if (input.imageUrl !== undefined) record.imageUrl = input.imageUrl;
    this.paymentsById.set(paymentId, record);
    return snapshot(record);
  }

  /** Creates a pre-authorization already held (state `preauthorized`; no checkout, no expiry). */
  createPreauthorized(input: NewPreauthorization): SandboxPayment {
    const record: PaymentRecord = {
      paymentId: randomId('pay'),
      kind: 'preauthorized',
      state: 'pending',
      amount: input.amount,
      acceptCard: false,
      sessionTimeoutSecs: DEFAULT_SESSION_TIMEOUT_SECS,
      orderNumber: this.nextOrderNumber(),
      createdAt: this.isoNow(),
    };
    if (input.developerTrackingId !== undefined) record.developerTrackingId = input.developerTrackingId;
    if (input.clientId !== undefined) record.clientId = input.clientId;
    this.paymentsById.set(record.paymentId, record);
    this.pay(record);
    return snapshot(record);
  }

  /** Snapshot of one payment, expiry applied; undefined when unknown. */
  get(paymentId: string): SandboxPayment | undefined {
    const record = this.read(paymentId);
    return record && snapshot(record);
  }

  /** Snapshots of every payment, oldest first. */
  list(): SandboxPayment[] {
    return [...this.paymentsById.keys()].map((id) => snapshot(this.read(id) as PaymentRecord));
  }

  /**
   * Ends a pending payment: paid (held, for a pre-authorization), declined, or expired.
   * Returns the new snapshot, or the reason it cannot be done.
   */
  settle(paymentId: string, outcome: Settlement): SandboxPayment | { error: 'unknown' | SandboxPaymentState } {
    const record = this.read(paymentId);
    if (!record) return { error: 'unknown' };
    if (record.state !== 'pending') return { error: record.state };
    if (outcome === 'paid') {
      this.pay(record);
    } else if (outcome === 'failed') {
      record.state = 'failed';
      record.failedAt = this.isoNow();
    } else {
      this.expire(record, this.isoNow());
    }
    return snapshot(record);
  }

  /**
   * Refunds a paid standard payment or a captured pre-authorization, once (the captured amount:
   * what was taken). Undefined when the payment cannot be refunded.
   *
   * The service refunds "a completed standard payment" and its documentation does not say
   * whether a captured pre-authorization can be refunded (docs/service-facts.md §7). Once
   * captured, the money was taken like a standard payment's, so the sandbox refunds it: a shop can
   * then test its refund path for "pay now, capture later" orders. A real account that refuses
   * answers REFUND_NOT_ALLOWED, which the plugin surfaces as `RefundNotAllowedError`.
   */
  refund(paymentId: string): SandboxPayment | undefined {
    const record = this.read(paymentId);
    const taken =
      record !== undefined &&
      ((record.kind === 'standard' && record.state === 'paid') ||
        (record.kind === 'preauthorized' && record.state === 'captured'));
    if (!record || !taken) return undefined;
    record.state = 'refunded';
    record.refundId = randomId('ref');
    record.refundedAt = this.isoNow();
    return snapshot(record);
  }

  /** Cancels a held pre-authorization, once. Undefined when the payment cannot be cancelled. */
  cancel(paymentId: string): SandboxPayment | undefined {
    const record = this.read(paymentId);
    if (!record || record.state !== 'preauthorized') return undefined;
    record.state = 'cancelled';
    record.cancelledAt = this.isoNow();
    return snapshot(record);
  }

  /**
   * Captures a held pre-authorization, once (service facts §5): all of it when `amount` is undefined, else
   * `amount` millimes (at most the held amount; the rest is released).
   */
  capture(paymentId: string, amount: string | undefined): SandboxPayment | { error: CaptureRefusal } {
    const record = this.read(paymentId);
    if (!record || record.state !== 'preauthorized') return { error: 'not_allowed' };
    if (amount !== undefined && BigInt(amount) > BigInt(record.amount)) return { error: 'exceeds' };
    record.state = 'captured';
    record.capturedAmount = amount ?? record.amount;
    record.capturedAt = this.isoNow();
    return snapshot(record);
  }

  /** Stores a binding for a customer. */
  addBinding(input: SandboxBindingInput): SandboxBinding {
    const binding: SandboxBinding = Object.freeze({
      binding_id: randomUUID(),
      client_id: input.clientId,
      card_last_four: input.cardLastFour,
      card_brand: input.cardBrand,
      status: input.status ?? 'active',
      created_at: this.isoNow(),
    });
    const list = this.bindingsByClient.get(input.clientId) ?? [];
    list.push(binding);
    this.bindingsByClient.set(input.clientId, list);
    return binding;
  }

  /** Bindings of one customer, oldest first; empty for an unknown customer. */
  bindings(clientId: string): SandboxBinding[] {
    return [...(this.bindingsByClient.get(clientId) ?? [])];
  }

  /**
   * The customer pays: the amount is taken (standard) or held (pre-authorization), and a payment
   * made with a `client_id` leaves a binding of the card (create-binding page: "once the customer
   * pays, the binding exists"), one per paid payment.
   */
  private pay(record: PaymentRecord): void {
    record.state = record.kind === 'preauthorized' ? 'preauthorized' : 'paid';
    record.paidAt = this.isoNow();
    record.approvalCode = String(randomInt(0, 1_000_000)).padStart(6, '0');
    if (record.clientId !== undefined) {
      record.bindingId = this.addBinding({
        clientId: record.clientId,
        cardLastFour: SANDBOX_CARD.lastFour,
        cardBrand: SANDBOX_CARD.brand,
      }).binding_id;
    }
  }

  private expire(record: PaymentRecord, at: string): void {
    record.state = 'expired';
    record.expiredAt = at;
  }

  /** The live record, with expiry applied lazily so no timer has to run (and be cleaned up). */
  private read(paymentId: string): PaymentRecord | undefined {
    const record = this.paymentsById.get(paymentId);
    if (record && record.state === 'pending' && record.expiresAtMs !== undefined && this.now() >= record.expiresAtMs) {
      this.expire(record, new Date(record.expiresAtMs).toISOString());
    }
    return record;
  }
}

function snapshot(record: PaymentRecord): SandboxPayment {
  const { expiresAtMs: _internal, ...rest } = record;
  return Object.freeze(rest);
}
