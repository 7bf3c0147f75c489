import type { PaymentsOperation } from '../api/index.js';
import type { OutcomeSource } from '../store/index.js';

/**
 * The seam between the engine and whatever observes it. The engine (transport calls, the
 * settlement runner, the webhook front door, reconciliation) reports through these few hooks and
 * knows nothing else of tracing or metrics; `telemetry.otel.ts` implements them with
 * OpenTelemetry, {@link NO_TELEMETRY} with nothing. Each hook wraps the work it observes, so that
 * an implementation can make a span's context active around it (the verify call and the handlers
 * then run inside the settle's span).
 */
export interface TelemetryHooks {
  /** Whether anything is recorded; callers skip building what only telemetry would read. */
  readonly active: boolean;
  /**
   * A call to the service. `run` fills in `stats` (attempts, final HTTP status).
   * @param urlTemplate the path with ids replaced by placeholders
   */
  call<T>(
    operation: PaymentsOperation,
    method: 'GET' | 'POST',
    urlTemplate: string,
    run: (stats: CallStats) => Promise<T>,
  ): Promise<T>;
  /**
   * One settle of a payment (claim -> verify -> handlers -> finish), whatever path started it.
   * @param summary what the result says, for the span and the metric (the settlement maps its results exhaustively)
   */
  settle<R>(
    paymentId: string,
    source: OutcomeSource,
    run: (trace: SettleTrace) => Promise<R>,
    summary: (result: R) => SettleSummary,
  ): Promise<R>;
  /**
   * One webhook delivery, from the moment it is authenticated to its answer.
   * @param route the route template (never the token)
   */
  webhook(route: string): WebhookTrace;
  /** One reconciliation pass; `run` reports how many payments were due. */
  reconciliation<R extends { checked: number; settled: number }>(
    run: (due: (count: number) => void) => Promise<R>,
  ): Promise<R>;
  /** The client is closing: stop observing (gauges, timers). */
  close(): void;
}

/** What a call to the service reports to its observer, filled in by the transport. */
export interface CallStats {
  /** Attempts made (1 + retries). */
  attempts: number;
  /** HTTP status of the final answer, when one came. */
  status?: number;
}

/** The handle a settle gives to the work it wraps. */
export interface SettleTrace {
  /** Runs the outcome's handlers, timing them. */
  handlers<T>(name: string, run: () => Promise<T>): Promise<T>;
}

/** The handle of one webhook delivery. */
export interface WebhookTrace {
  /** Runs the settling of the delivery inside the delivery's span. */
  within<T>(run: () => Promise<T>): Promise<T>;
  /** Ends the delivery with its answer. */
  end(status: number, result: string, paymentId?: string): void;
}

/** What a settle's result says to whoever observes it. */
export interface SettleSummary {
  /** The result's kind (`handled`, `pending`, ...): `payments.settle.result`. */
  result: string;
  /** The payment's outcome, when the result tells one: `payments.outcome`. */
  outcome?: string;
  /** Whether the settle ends in error (its span's status). */
  failed: boolean;
}

const NOOP_SETTLE: SettleTrace = { handlers: (_name, run) => run() };
const NOOP_WEBHOOK: WebhookTrace = { within: (run) => run(), end: () => undefined };

const NOTHING: TelemetryHooks = {
  active: false,
  call: (_operation, _method, _template, run) => run({ attempts: 0 }),
  settle: (_paymentId, _source, run) => run(NOOP_SETTLE),
  webhook: () => NOOP_WEBHOOK,
  reconciliation: (run) => run(() => undefined),
  close: () => undefined,
};

/** Hooks that observe nothing: the default, and what a client with telemetry off uses. */
export const NO_TELEMETRY: TelemetryHooks = Object.freeze(NOTHING);
