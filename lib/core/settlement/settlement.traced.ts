import { assertNever } from '../common/index.js';
import type { OutcomeSource } from '../store/index.js';
import type { SettleSummary, TelemetryHooks } from '../telemetry/index.js';
import type { SettleRequest, SettleResult, Settlements } from './settlement.request.js';

/**
 * The settlements as telemetry sees them: each settle of the wrapped runner inside a span whose
 * context the verify call and the handlers run in, the handlers timed through the request's
 * observer, and the result summarised for the span and the metric. The runner knows nothing of it.
 */
export class TracedSettlements implements Settlements {
  /**
   * @param runner what settles
   * @param telemetry what observes each settle
   */
  constructor(
    private readonly runner: Settlements,
    private readonly telemetry: TelemetryHooks,
  ) {}

  /** @inheritdoc */
  settle(request: SettleRequest): Promise<SettleResult> {
    const { paymentId, source } = request;
    return this.telemetry.settle(
      paymentId,
      source,
      (trace) => this.runner.settle({ ...request, observe: trace }),
      settleSummary,
    );
  }

  /** @inheritdoc */
  hold(paymentId: string, source: OutcomeSource, work: () => Promise<void>): Promise<'held' | 'done' | 'busy'> {
    return this.runner.hold(paymentId, source, work);
  }
}

/**
 * What a settle result says to telemetry. Exhaustive: a new kind of result must say here whether it
 * is an error and which outcome it tells, or the compiler refuses it.
 */
export function settleSummary(result: SettleResult): SettleSummary {
  switch (result.kind) {
    case 'handled':
      return { result: result.kind, outcome: result.outcome, failed: false };
    case 'order-duplicate':
      return { result: result.kind, outcome: result.outcome, failed: false };
    case 'handlers-failed':
      return { result: result.kind, outcome: result.outcome, failed: true };
    case 'pending':
      return { result: result.kind, outcome: 'pending', failed: false };
    case 'mismatch':
      return { result: result.kind, outcome: 'mismatch', failed: true };
    case 'verify-failed':
    case 'store-unavailable':
      return { result: result.kind, failed: true };
    case 'duplicate':
    case 'busy':
    case 'foreign':
    case 'rate-limited':
    case 'deferred':
      return { result: result.kind, failed: false };
    default:
      return assertNever(result);
  }
}
