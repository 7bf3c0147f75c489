import {
  serviceDefaultOf,
  type OptionDefaultedFieldName,
  type PreAuthorizationFlag,
  type GeneratePaymentInput,
} from '../api/index.js';
import { DEFAULT_HANDLER_TIMEOUT_MS, type PaymentsReconciliationOptions } from '../settlement/index.js';
import type { PaymentsLogger } from '../common/index.js';
import type { PaymentsInbox, PaymentsStore } from '../store/index.js';
import type { Clock } from '../time/index.js';
import type { ResolvedWebhookOptions } from '../webhook/index.js';

/** Webhook options. Signed webhooks are on when both `publicUrl` and `secret` are set. */
export interface PaymentsWebhookOptions {
  /** Route of the webhook controller, under the host's global prefix if any. Default `'payments/webhook'`. */
  path?: string;
  /**
   * The public absolute URL at which the service can reach that route, e.g.
   * `https://shop.example.com/api/payments/webhook` (behind a proxy: the proxy's URL). Each
   * payment's webhook URL is this plus `/<signed token>`. No default.
   */
  publicUrl?: string;
  /** HMAC-SHA256 key signing webhook tokens: at least 32 characters; keep it secret. No default. */
  secret?: string;
  /**
   * Secrets of before a rotation, each at least 32 characters: tokens they signed are still
   * accepted until they expire (`tokenTtlSecs`); new tokens are always signed with `secret`.
   * The rolling-deploy procedure is in docs/security.md. Never logged. Default none.
   */
  previousSecrets?: readonly string[];
  /**
   * Also accept deliveries without the plugin's token (a webhook URL set in the service's
   * dashboard). They are only hints: the payment must be one this plugin generated (in the
   * store's reconciliation queue), it is verified with the service, and at most once per
   * `unsignedIntervalSecs`. Default false (401).
   */
  acceptUnsigned?: boolean;
  /**
   * Least time between two verifications triggered by unsigned deliveries for one payment, and by
   * deliveries of one signed token whose binding the store no longer has (a restart with the
   * memory store), in seconds; more frequent ones get 429 with Retry-After. Default 30.
   */
  unsignedIntervalSecs?: number;
  /** Largest accepted webhook body in bytes (chunked bodies too); larger ones get 413. Default 65 536. */
  maxBodyBytes?: number;
  /** How long a token stays valid after generation, in seconds. Default 604 800 (7 days). */
  tokenTtlSecs?: number;
  /**
   * The lease of a payment's claim, in ms: renewed every third of it while the handlers run, so it
   * bounds how long a crashed instance blocks the payment, not how long handlers may take.
   * Default 60 000.
   */
  leaseMs?: number;
  /** How long a settled payment's done marker is kept, so duplicates run nothing, in seconds. Default 2 592 000 (30 days). */
  doneTtlSecs?: number;
}

/**
 * The options that default `generatePayment` fields (`successLink`, `failLink`, `acceptCard`,
 * `sessionTimeoutSecs`, `imageUrl`): each has the type, rule and documentation of the field of the
 * same name in the field table (`PAYMENT_FIELDS`), and applies to every `generatePayment` that
 * does not set it. Default: not sent (the service's own default).
 * @interface
 */
export type PaymentFieldDefaults = Pick<GeneratePaymentInput, OptionDefaultedFieldName>;

/** Options shared by `PaymentsModule` and `createPaymentsClient`. */
export interface PaymentsOptions extends PaymentFieldDefaults {
  /** Public key issued by the service. Required. */
  publicKey: string;
  /** Private key issued by the service. Required. Never logged, echoed or serialised. */
  privateKey: string;
  /** Base address of the service, e.g. `https://pay.example.com` (paths start with `/api/v2/`). Required. */
  baseUrl: string;
  /** Timeout of each HTTP attempt, in ms. Default 10 000. */
  timeoutMs?: number;
  /** Extra attempts for safe cases (GET on network errors, 429, 5xx; POST refused before sending). Default 2. */
  maxRetries?: number;
  /** Signed webhooks; see {@link PaymentsWebhookOptions}. Default: off. */
  webhook?: PaymentsWebhookOptions;
  /** Re-checking unsettled payments; see {@link PaymentsReconciliationOptions}. Default: on, every 60 s. */
  reconciliation?: PaymentsReconciliationOptions;
  /**
   * Wire name of `generatePayment`'s `preAuthorization` flag: the service's pages disagree
   * (docs/service-facts.md §4). Default `'pre_authorization'`; `'both'` sends both names.
   */
  preAuthorizationFlag?: PreAuthorizationFlag;
  /** How long the record of each payment's outcome is kept, in seconds. Default 2 592 000 (30 days). */
  outcomeRecordTtlSecs?: number;
  /** Where token bindings, claims, the reconciliation queue and the outcome record live. Default: a new `MemoryPaymentsStore`. */
  store?: PaymentsStore;
  /**
   * Exactly-once effects in the host's own database, whatever the store (docs/exactly-once.md):
   * the handlers run in the host's transaction with a done row of the inbox, inserted before
   * them under a unique key; the row, not the store, says whether an outcome's handlers ran.
   * Build it with `sqlInbox()` from `nestjs-payments/store`. Not with a transactional store.
   * Default: none (effectively once, or the transactional store's own transaction).
   */
  inbox?: PaymentsInbox;
  /** Where the plugin logs. Default: Nest's `Logger` in a Nest app, stderr (warnings and errors only) elsewhere. */
  logger?: PaymentsLogger;
  /** Name of this registration, when an app has several (several merchant accounts). Put on every event. Default: none. */
  name?: string;
  /**
   * One payment per checkout (docs/confirmations.md). An order is a payment's `developerTrackingId`
   * (or the `idempotencyKey` passed to `generatePayment`).
   */
  orders?: {
    /**
     * `generatePayment` for an order whose open payment has the same amount and request (links,
     * session, card options) and a session not about to end returns that payment instead of
     * opening another at the service; a changed amount opens a new one, and so does a payment the
     * store knows can no longer be paid (declined, expired, cancelled: docs/confirmations.md).
     * Default true.
     */
    reuseOpenPayment?: boolean;
  };
  /**
   * Payments that succeed for an order another payment already settled: never confirmed, each
   * emits `payment.duplicate` once (docs/confirmations.md).
   */
  duplicates?: {
    /**
     * Refund each duplicate through the normal refund path (`refundPayment`, whose
     * `payment.refunded` event names the payment that settled the order). The duplicate is
     * reported at once whatever the refund does; the refund is sent at most once per payment (a
     * marker in the store, taken before the call): one whose answer was lost is recorded
     * `unknown` for a person, never sent again; only a call that cannot have reached the service
     * (or a 429) is tried again, at most 3 calls in all. Its state is in the outcome record
     * (`refundState`). Default false.
     */
    refund?: boolean;
  };
  /** How the outcome handlers (events, router callbacks) are run; see {@link PaymentsHandlersOptions}. */
  handlers?: PaymentsHandlersOptions;
  /**
   * The engine's clock: every age, due time, lease renewal and wait reads it (tests move it). Due
   * times and record ages shared with other instances are corrected by the store's own clock when
   * the store has one (`store.now()`: Redis, PostgreSQL), so skew between instances neither
   * freezes nor skips work. Default: the system clock.
   */
  clock?: Clock;
  /**
   * Tracing and metrics through `@opentelemetry/api`, when it is installed (docs/operations.md).
   * `false` turns them off; providers default to the global ones; the reconciliation backlog gauge
   * reads `store.countPending()` at most once per `backlogIntervalSecs` (default 30). Default: on.
   */
  telemetry?:
    | boolean
    | {
        /** false: record nothing. Default true. */
        enabled?: boolean;
        /** An OpenTelemetry TracerProvider for this registration. Default: the global one. */
        tracerProvider?: {
          /** Returns a Tracer. */
          getTracer(name: string, version?: string): unknown;
        };
        /** An OpenTelemetry MeterProvider for this registration. Default: the global one. */
        meterProvider?: {
          /** Returns a Meter. */
          getMeter(name: string, version?: string): unknown;
        };
        /** Least time between two `countPending()` reads of the backlog gauge, in seconds. Default 30. */
        backlogIntervalSecs?: number;
      };
}

/** `handlers` of {@link PaymentsOptions}: how the outcome handlers of a payment are run. */
export interface PaymentsHandlersOptions {
  /**
   * How long the handlers of one outcome may run, in ms, on the engine's clock. Past it the run
   * fails like a handler that threw: the payment's claim is no longer renewed but released, the
   * failure recorded, and the payment checked again later (its handlers then run again); the
   * handlers' promise is abandoned (it cannot be cancelled) and how it ends is logged. It also
   * bounds how long `close()` waits for the handlers in flight (give a container at least this
   * long to stop). Default 60 000.
   */
  timeoutMs?: number;
}

/** Options after validation, with every default filled in. */
export interface ResolvedPaymentsOptions {
  readonly publicKey: string;
  readonly privateKey: string;
  readonly baseUrl: string;
  /** Defaults of `generatePayment` fields, from the options of the same names (see `PAYMENT_FIELDS`). */
  readonly defaults: Readonly<Partial<GeneratePaymentInput>>;
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly webhook: ResolvedWebhookOptions;
  readonly reconciliation: Required<PaymentsReconciliationOptions>;
  readonly preAuthorizationFlag: PreAuthorizationFlag;
  readonly outcomeRecordTtlMs: number;
  readonly store?: PaymentsStore;
  readonly inbox?: PaymentsInbox;
  readonly logger: PaymentsLogger;
  readonly name?: string;
  /** `orders`, defaults filled in. */
  readonly orders: { readonly reuseOpenPayment: boolean };
  /** `duplicates`, defaults filled in. */
  readonly duplicates: { readonly refund: boolean };
  /** `handlers`, defaults filled in. */
  readonly handlers: { readonly timeoutMs: number };
  /** The engine's clock (the system clock unless one was given). */
  readonly clock: Clock;
  /** Tracing and metrics: off only when `telemetry` is `false` (or `enabled: false`); the backlog interval in ms. */
  readonly telemetry: {
    /** Whether anything is recorded. */
    readonly enabled: boolean;
    /** The registration's own TracerProvider, if given. */
    readonly tracerProvider?: {
      /** Returns a Tracer. */
      getTracer(name: string, version?: string): unknown;
    };
    /** The registration's own MeterProvider, if given. */
    readonly meterProvider?: {
      /** Returns a Meter. */
      getMeter(name: string, version?: string): unknown;
    };
    /** Least time between two backlog reads, in ms. */
    readonly backlogIntervalMs: number;
  };
}

/** Default option values, for documentation and tests. */
export const PAYMENTS_DEFAULTS = {
  /** `timeoutMs`. */
  timeoutMs: 10_000,
  /** `maxRetries`. */
  maxRetries: 2,
  /** `webhook.path`. */
  webhookPath: 'payments/webhook',
  /** `webhook.maxBodyBytes`. */
  maxBodyBytes: 65_536,
  /** `webhook.tokenTtlSecs` (7 days). */
  tokenTtlSecs: 7 * 24 * 3600,
  /** `webhook.leaseMs`. */
  leaseMs: 60_000,
  /** `handlers.timeoutMs`. */
  handlerTimeoutMs: DEFAULT_HANDLER_TIMEOUT_MS,
  /** `webhook.doneTtlSecs` (30 days). */
  doneTtlSecs: 30 * 24 * 3600,
  /** Shortest accepted `webhook.secret`. */
  minSecretLength: 32,
  /** `webhook.unsignedIntervalSecs`. */
  unsignedIntervalSecs: 30,
  /** `reconciliation.*`. */
  reconciliation: {
    enabled: true,
    intervalSecs: 60,
    graceSecs: 60,
    maxChecks: 10,
    batchSize: 20,
    horizonDays: 7,
  } as Required<PaymentsReconciliationOptions>,
  /** `outcomeRecordTtlSecs` (30 days). */
  outcomeRecordTtlSecs: 30 * 24 * 3600,
  /** The service's own default session, when a payment sets none (docs/service-facts.md §4; the field table's `serviceDefault`). */
  serviceSessionTimeoutSecs: serviceDefaultOf('sessionTimeoutSecs'),
} as const;
