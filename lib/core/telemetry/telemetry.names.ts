/**
 * The names telemetry is recorded under, and the one context key shared with the health indicator.
 * Nothing here loads `@opentelemetry/api`.
 */

/** Instrumentation scope of every tracer and meter. */
export const TELEMETRY_SCOPE = 'nestjs-payments';

/** Span names (the operation is appended to `payments ` for calls to the service). */
export const SPAN_NAMES = {
  /** CLIENT span of one call to the service, e.g. `payments verifyPayment`. */
  call: (operation: string) => `payments ${operation}`,
  /** One webhook delivery, authentication to answer; also the span of the settle it starts. */
  webhook: 'payments webhook',
  /** One settlement on the return check or in reconciliation (claim, verify, handlers, done). */
  settle: 'payments settle',
  /** One reconciliation pass; the parent of its settles. */
  reconciliation: 'payments reconciliation',
} as const;

/**
 * Metric names. All are the plugin's own (`payments.*`): a call to the service is one logical
 * operation, retries and backoff included, which OpenTelemetry's `http.client.request.duration`
 * (one per physical request, recorded by `@opentelemetry/instrumentation-http` when installed)
 * does not describe; the two never count the same thing twice.
 */
export const METRIC_NAMES = {
  /**
   * Histogram (s): one per call to the service, retries and backoff included, by
   * `payments.operation`, `http.response.status_code` (the final answer's), `error.type` (the
   * error's code), `payments.attempts` (when more than one) and `payments.probe` (health probes).
   * Its count is the calls by operation and result; requests sent = count + the extra attempts.
   */
  clientDuration: 'payments.client.operation.duration',
  /** Histogram (s): time to answer a webhook delivery, by `http.response.status_code` and `payments.webhook.result`; its count is the deliveries. */
  webhookDuration: 'payments.webhook.duration',
  /**
   * Histogram (s): one per settle (claim, verify, handlers, done), by `payments.source`,
   * `payments.settle.result` and `payments.outcome`; its count is the outcomes by kind and path
   * (settled payments: results `handled` and `mismatch`; a second charge of an order another
   * payment settled: result `order-duplicate`, outcome `duplicate`).
   */
  settleDuration: 'payments.outcome.duration',
  /** Observable gauge: payments queued for reconciliation (`store.countPending()`, throttled). */
  backlog: 'payments.reconciliation.backlog',
} as const;

/**
 * The OpenTelemetry context key that marks work as a health probe (set by the health indicator in
 * lib/terminus/, read by the call hook, which then adds `payments.probe=true`). A `Symbol.for`
 * key, as `createContextKey` makes it: both sides name it without importing each other, and every
 * copy of the package agrees on it.
 * @internal
 */
export const HEALTH_PROBE_KEY: unique symbol = Symbol.for('nestjs-payments.probe');
