import { isHttpUrl } from './payment.dto.js';
import type { PaymentConfirmedEvent } from './payment.events.js';
import { PaymentsValidationError, type PaymentsFieldError } from './payments.errors.js';
import { defaultPaymentsLogger, type PaymentsLogger } from './payments.logger.js';
import type { PaymentsStore } from './payments.store.js';

/** Webhook options. Webhooks are on when both `publicUrl` and `secret` are set. */
export interface PaymentsWebhookOptions {
  /** Route of the webhook controller, under the host's global prefix if any. Default `'payments/webhook'`. */
  path?: string;
  /**
   * The public absolute URL at which the service can reach that route, e.g.
   * `https://shop.example.com/api/payments/webhook` (behind a proxy: the proxy's URL). No default.
   */
  publicUrl?: string;
  /** HMAC-SHA256 key signing webhook tokens: at least 32 characters; keep it secret. No default. */
  secret?: string;
  /**
   * Optional extra check of a confirmation before it is emitted (e.g. ask another system).
   * Return false to refuse it (403, nothing emitted); throw to have it redelivered (503).
   * Default: none; the signed token is the proof.
   */
  verify?: (event: PaymentConfirmedEvent) => boolean | Promise<boolean>;
  /** Largest accepted webhook body in bytes; larger ones get 413. Default 65 536. */
  maxBodyBytes?: number;
  /** How long a token stays valid after generation, in seconds. Default 604 800 (7 days). */
  tokenTtlSecs?: number;
  /** How long a delivery's claim lasts before another delivery may take over, in ms. Default 60 000. */
  leaseMs?: number;
  /** How long a handled confirmation is remembered, so duplicates run nothing, in seconds. Default 2 592 000 (30 days). */
  doneTtlSecs?: number;
}

/** Options shared by `PaymentsModule` and `createPaymentsClient`. */
export interface PaymentsOptions {
  /** Public key issued by the service. Required. */
  publicKey: string;
  /** Private key issued by the service. Required. Never logged, echoed or serialised. */
  privateKey: string;
  /** Base address of the service, e.g. `https://pay.example.com` (paths start with `/api/v2/`). Required. */
  baseUrl: string;
  /** Default `successLink` of every `generatePayment`. No default. */
  successLink?: string;
  /** Default `failLink` of every `generatePayment`. No default. */
  failLink?: string;
  /** Default `acceptCard` of every `generatePayment`. Default: not sent (the service assumes false). */
  acceptCard?: boolean;
  /** Default `sessionTimeoutSecs` of every `generatePayment`. Default: not sent (the service assumes 1200). */
  sessionTimeoutSecs?: number;
  /** Default `imageUrl` of every `generatePayment`. Default: not sent (the portal's image). */
  imageUrl?: string;
  /** Timeout of each HTTP attempt, in ms. Default 10 000. */
  timeoutMs?: number;
  /** Extra attempts for safe cases (GET on network errors, 429, 5xx; POST refused before sending). Default 2. */
  maxRetries?: number;
  /** Signed webhooks; see {@link PaymentsWebhookOptions}. Default: off. */
  webhook?: PaymentsWebhookOptions;
  /** Where bindings and delivery claims live. Default: a new `MemoryPaymentsStore`. */
  store?: PaymentsStore;
  /** Where the plugin logs. Default: Nest's `Logger` in a Nest app, stderr (warnings and errors only) elsewhere. */
  logger?: PaymentsLogger;
}

/** Options after validation, with every default filled in. */
export interface ResolvedPaymentsOptions {
  readonly publicKey: string;
  readonly privateKey: string;
  readonly baseUrl: string;
  readonly defaults: {
    readonly successLink?: string;
    readonly failLink?: string;
    readonly acceptCard?: boolean;
    readonly sessionTimeoutSecs?: number;
    readonly imageUrl?: string;
  };
  readonly timeoutMs: number;
  readonly maxRetries: number;
  readonly webhook: ResolvedWebhookOptions;
  readonly store?: PaymentsStore;
  readonly logger: PaymentsLogger;
}

/** Webhook options after validation. `enabled` is true when publicUrl and secret are set. */
export interface ResolvedWebhookOptions {
  readonly enabled: boolean;
  readonly path: string;
  readonly publicUrl?: string;
  readonly secret?: string;
  readonly verify?: (event: PaymentConfirmedEvent) => boolean | Promise<boolean>;
  readonly maxBodyBytes: number;
  readonly tokenTtlMs: number;
  readonly leaseMs: number;
  readonly doneTtlMs: number;
}

/** Default option values, for documentation and tests. */
export const PAYMENTS_DEFAULTS = {
  timeoutMs: 10_000,
  maxRetries: 2,
  webhookPath: 'payments/webhook',
  maxBodyBytes: 65_536,
  tokenTtlSecs: 7 * 24 * 3600,
  leaseMs: 60_000,
  doneTtlSecs: 30 * 24 * 3600,
  minSecretLength: 32,
} as const;

function isPositiveInt(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}

/**
 * Validates options and fills in defaults. Every problem is reported at once, by option name;
 * values are never echoed (the private key and the secret must not reach a log).
 *
 * @throws PaymentsValidationError listing each missing or invalid option
 */
export function resolvePaymentsOptions(options: PaymentsOptions | undefined): ResolvedPaymentsOptions {
  const o = (options ?? {}) as Partial<PaymentsOptions>;
  const errors: PaymentsFieldError[] = [];
  const bad = (field: string, message: string) => errors.push({ field, messages: [message] });

  if (typeof o.publicKey !== 'string' || o.publicKey.trim() === '') bad('publicKey', 'is required (a non-empty string)');
  else if (/[\s:]/.test(o.publicKey)) bad('publicKey', 'must not contain spaces or colons');
  if (typeof o.privateKey !== 'string' || o.privateKey.trim() === '') bad('privateKey', 'is required (a non-empty string)');
  else if (/[\r\n]/.test(o.privateKey)) bad('privateKey', 'must not contain line breaks');
  if (!isHttpUrl(o.baseUrl)) bad('baseUrl', 'is required (an absolute http(s) URL)');
  for (const field of ['successLink', 'failLink', 'imageUrl'] as const) {
    if (o[field] !== undefined && !isHttpUrl(o[field])) bad(field, 'must be an absolute http(s) URL');
  }
  if (o.acceptCard !== undefined && typeof o.acceptCard !== 'boolean') bad('acceptCard', 'must be a boolean');
  if (o.sessionTimeoutSecs !== undefined && !isPositiveInt(o.sessionTimeoutSecs)) bad('sessionTimeoutSecs', 'must be a positive integer');
  if (o.timeoutMs !== undefined && !isPositiveInt(o.timeoutMs)) bad('timeoutMs', 'must be a positive integer');
  if (o.maxRetries !== undefined && !(Number.isSafeInteger(o.maxRetries) && o.maxRetries >= 0 && o.maxRetries <= 10)) {
    bad('maxRetries', 'must be an integer from 0 to 10');
  }
  if (o.store !== undefined && !isStore(o.store)) bad('store', 'must implement PaymentsStore');

  const w = o.webhook ?? {};
  if (w.path !== undefined && (typeof w.path !== 'string' || !/^\/?[A-Za-z0-9._~\-/]+$/.test(w.path))) {
    bad('webhook.path', 'must be a URL path such as "payments/webhook"');
  }
  if (w.publicUrl !== undefined && !isHttpUrl(w.publicUrl)) bad('webhook.publicUrl', 'must be an absolute http(s) URL');
  if (w.secret !== undefined && (typeof w.secret !== 'string' || w.secret.length < PAYMENTS_DEFAULTS.minSecretLength)) {
    bad('webhook.secret', `must be a string of at least ${PAYMENTS_DEFAULTS.minSecretLength} characters`);
  }
  if (w.publicUrl !== undefined && w.secret === undefined) bad('webhook.secret', 'is required when webhook.publicUrl is set');
  if (w.secret !== undefined && w.publicUrl === undefined) bad('webhook.publicUrl', 'is required when webhook.secret is set');
  if (w.verify !== undefined && typeof w.verify !== 'function') bad('webhook.verify', 'must be a function');
  for (const field of ['maxBodyBytes', 'tokenTtlSecs', 'leaseMs', 'doneTtlSecs'] as const) {
    if (w[field] !== undefined && !isPositiveInt(w[field])) bad(`webhook.${field}`, 'must be a positive integer');
  }

  if (errors.length > 0) throw new PaymentsValidationError(errors, 'payments options');

  const opts = o as PaymentsOptions;
  return {
    publicKey: opts.publicKey,
    privateKey: opts.privateKey,
    baseUrl: opts.baseUrl.replace(/\/+$/, ''),
    defaults: {
      successLink: opts.successLink,
      failLink: opts.failLink,
      acceptCard: opts.acceptCard,
      sessionTimeoutSecs: opts.sessionTimeoutSecs,
      imageUrl: opts.imageUrl,
    },
    timeoutMs: opts.timeoutMs ?? PAYMENTS_DEFAULTS.timeoutMs,
    maxRetries: opts.maxRetries ?? PAYMENTS_DEFAULTS.maxRetries,
    webhook: {
      enabled: w.publicUrl !== undefined && w.secret !== undefined,
      path: (w.path ?? PAYMENTS_DEFAULTS.webhookPath).replace(/^\/+|\/+$/g, ''),
      publicUrl: w.publicUrl,
      secret: w.secret,
      verify: w.verify,
      maxBodyBytes: w.maxBodyBytes ?? PAYMENTS_DEFAULTS.maxBodyBytes,
      tokenTtlMs: (w.tokenTtlSecs ?? PAYMENTS_DEFAULTS.tokenTtlSecs) * 1000,
      leaseMs: w.leaseMs ?? PAYMENTS_DEFAULTS.leaseMs,
      doneTtlMs: (w.doneTtlSecs ?? PAYMENTS_DEFAULTS.doneTtlSecs) * 1000,
    },
    store: opts.store,
    logger: opts.logger ?? defaultPaymentsLogger,
  };
}

function isStore(value: unknown): value is PaymentsStore {
  const s = value as Record<string, unknown> | null;
  return (
    typeof s === 'object' && s !== null &&
    ['saveBinding', 'findBinding', 'claim', 'markDone', 'release'].every((m) => typeof s[m] === 'function')
  );
}
