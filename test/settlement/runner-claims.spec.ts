/**
 * The runner as the one owner of a payment's claim: the sweep's bookkeeping holds the claim through
 * it (`hold`), and telemetry reads a settle's result only through its exhaustive summary.
 */
import { describe, expect, it } from '@jest/globals';
import type { PaymentsLogger } from '../../lib/core/common/payments.logger.js';
import type { SettleResult } from '../../lib/core/settlement/settlement.request.js';
import { outcomeKey } from '../../lib/core/settlement/settlement.attempt.js';
import { SettlementRunner, settleSummary } from '../../lib/core/settlement/settlement.runner.js';
import { UnboundTokens } from '../../lib/core/settlement/settlement.gate.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import { SharedClock, SYSTEM_CLOCK } from '../../lib/core/time/time.clock.js';

const quiet: PaymentsLogger = { log: () => undefined, warn: () => undefined, error: () => undefined };

function runnerOn(store: MemoryPaymentsStore): SettlementRunner {
  const options = {
    leaseMs: 60_000,
    doneTtlMs: 60_000,
    recordTtlMs: 60_000,
    clock: new SharedClock(SYSTEM_CLOCK),
    unbound: new UnboundTokens(store, 30, quiet),
  };
  return new SettlementRunner(options, store, { verify: () => Promise.reject(new Error('no verify here')) }, quiet);
}

describe('SettlementRunner.hold', () => {
  it('runs the work under the payment claim, then gives the claim back', async () => {
    const store = new MemoryPaymentsStore();
    const runner = runnerOn(store);
    let during: string | undefined;
    expect(
      await runner.hold(
        'pay_1',
        'reconciliation',
        async () => void (during = await store.claim(outcomeKey('pay_1'), 'someone else', 1000)),
      ),
    ).toBe('held');
    expect(during).toBe('busy');
    expect(await store.claim(outcomeKey('pay_1'), 'someone else', 1000)).toBe('claimed');
  });

  it('runs nothing when the payment is busy or done', async () => {
    const store = new MemoryPaymentsStore();
    const runner = runnerOn(store);
    let ran = 0;
    await store.claim(outcomeKey('pay_busy'), 'a settle', 60_000);
    expect(await runner.hold('pay_busy', 'reconciliation', async () => void ran++)).toBe('busy');
    await store.claim(outcomeKey('pay_done'), 'a settle', 60_000);
    await store.markDone(outcomeKey('pay_done'), 'a settle', 60_000);
    expect(await runner.hold('pay_done', 'reconciliation', async () => void ran++)).toBe('done');
    expect(ran).toBe(0);
  });

  it('gives the claim back when the work throws', async () => {
    const store = new MemoryPaymentsStore();
    const runner = runnerOn(store);
    await expect(runner.hold('pay_1', 'reconciliation', () => Promise.reject(new Error('store away')))).rejects.toThrow(
      'store away',
    );
    expect(await store.claim(outcomeKey('pay_1'), 'someone else', 1000)).toBe('claimed');
  });
});

describe('settleSummary: what telemetry reads of a settle result', () => {
  const verification = { paymentId: 'pay_1', status: 'SUCCESS', amount: '12500' };
  const cases: Array<[SettleResult, { result: string; outcome?: string; failed: boolean }]> = [
    [
      { kind: 'handled', outcome: 'confirmed', verification },
      { result: 'handled', outcome: 'confirmed', failed: false },
    ],
    [
      { kind: 'pending', verification },
      { result: 'pending', outcome: 'pending', failed: false },
    ],
    [
      { kind: 'mismatch', verification, problems: ['amount'] },
      { result: 'mismatch', outcome: 'mismatch', failed: true },
    ],
    [
      { kind: 'handlers-failed', outcome: 'failed', verification, error: 'boom' },
      { result: 'handlers-failed', outcome: 'failed', failed: true },
    ],
    [
      { kind: 'store-unavailable', error: 'down' },
      { result: 'store-unavailable', failed: true },
    ],
    [{ kind: 'busy' }, { result: 'busy', failed: false }],
    [{ kind: 'duplicate' }, { result: 'duplicate', failed: false }],
  ];
  it.each(cases)('%j', (result, summary) => {
    expect(settleSummary(result)).toEqual(summary);
  });
});
