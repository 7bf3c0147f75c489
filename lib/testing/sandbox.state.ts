/**
 * The sandbox's memory: payments, bindings, and the transitions between payment states.
 * No I/O here, so every rule of the state machine lives in one place and reads top to bottom.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type {
  SandboxBinding,
  SandboxBindingInput,
  SandboxPayment,
  SandboxPaymentState,
  SandboxPreauthorizationInput,
} from './sandbox.types.js';

/** Default session timeout of the spec, in seconds. */
export const DEFAULT_SESSION_TIMEOUT_SECS = 1200;

/** Path of the checkout page under the sandbox URL; the spec's `<merchant_slug>` is fixed. */
export const CHECKOUT_PATH = '/checkout/sandbox-merchant';

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
  /** Default false, as in the spec. */
  acceptCard?: boolean;
  /** Absolute http(s) URL. Default: none. */
  imageUrl?: string;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

interface PaymentRecord extends Mutable<SandboxPayment> {
  /** Epoch ms after which a pending payment is expired; kept numeric to compare with the clock. */
  expiresAtMs?: number;
}

/** The two outcomes a customer can choose on the checkout page. */
export type Settlement = 'paid' | 'failed';

function randomId(prefix: string): string {
  // 12 random bytes: unguessable and URL-safe once hex-encoded.
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** In-memory store and state machine of the sandbox. */
export class SandboxState {
  private readonly paymentsById = new Map<string, PaymentRecord>();
  private readonly bindingsByClient = new Map<string, SandboxBinding[]>();

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

  /** Creates a pending standard payment. */
  createPayment(input: NewPayment): SandboxPayment {
    const paymentId = randomId('pay');
    const createdAtMs = this.now();
    const sessionTimeoutSecs = input.sessionTimeoutSecs ?? DEFAULT_SESSION_TIMEOUT_SECS;
    const expiresAtMs = createdAtMs + sessionTimeoutSecs * 1000;
    const record: PaymentRecord = {
      paymentId,
      kind: 'standard',
      state: 'pending',
      amount: input.amount,
      successLink: input.successLink,
      failLink: input.failLink,
      acceptCard: input.acceptCard ?? false,
      sessionTimeoutSecs,
      link: `${this.baseUrl()}${CHECKOUT_PATH}/${paymentId}`,
      createdAt: new Date(createdAtMs).toISOString(),
      expiresAt: new Date(expiresAtMs).toISOString(),
      expiresAtMs,
    };
    if (input.developerTrackingId !== undefined) record.developerTrackingId = input.developerTrackingId;
    if (input.webhook !== undefined) record.webhook = input.webhook;
    if (input.imageUrl !== undefined) record.imageUrl = input.imageUrl;
    this.paymentsById.set(paymentId, record);
    return snapshot(record);
  }

  /** Creates a payment already in state `preauthorized` (no checkout, no expiry). */
  createPreauthorized(input: SandboxPreauthorizationInput): SandboxPayment {
    const record: PaymentRecord = {
      paymentId: randomId('pay'),
      kind: 'preauthorized',
      state: 'preauthorized',
      amount: input.amount,
      acceptCard: false,
      sessionTimeoutSecs: DEFAULT_SESSION_TIMEOUT_SECS,
      createdAt: this.isoNow(),
    };
    if (input.developerTrackingId !== undefined) record.developerTrackingId = input.developerTrackingId;
    if (input.clientId !== undefined) record.clientId = input.clientId;
    this.paymentsById.set(record.paymentId, record);
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
   * Pays or declines a pending payment, as the customer does on the checkout page.
   * Returns the new snapshot, or the reason it cannot be done.
   */
  settle(paymentId: string, outcome: Settlement): SandboxPayment | { error: 'unknown' | SandboxPaymentState } {
    const record = this.read(paymentId);
    if (!record) return { error: 'unknown' };
    if (record.state !== 'pending') return { error: record.state };
    record.state = outcome;
    if (outcome === 'paid') record.paidAt = this.isoNow();
    else record.failedAt = this.isoNow();
    return snapshot(record);
  }

  /** Refunds a paid standard payment, once. Undefined when the payment cannot be refunded. */
  refund(paymentId: string): SandboxPayment | undefined {
    const record = this.read(paymentId);
    if (!record || record.kind !== 'standard' || record.state !== 'paid') return undefined;
    record.state = 'refunded';
    record.refundId = randomId('ref');
    record.refundedAt = this.isoNow();
    return snapshot(record);
  }

  /** Cancels a pre-authorized payment, once. Undefined when the payment cannot be cancelled. */
  cancel(paymentId: string): SandboxPayment | undefined {
    const record = this.read(paymentId);
    if (!record || record.state !== 'preauthorized') return undefined;
    record.state = 'cancelled';
    record.cancelledAt = this.isoNow();
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

  /** The live record, with expiry applied lazily so no timer has to run (and be cleaned up). */
  private read(paymentId: string): PaymentRecord | undefined {
    const record = this.paymentsById.get(paymentId);
    if (record && record.state === 'pending' && record.expiresAtMs !== undefined && this.now() >= record.expiresAtMs) {
      record.state = 'expired';
    }
    return record;
  }
}

function snapshot(record: PaymentRecord): SandboxPayment {
  const { expiresAtMs: _internal, ...rest } = record;
  return Object.freeze(rest);
}
