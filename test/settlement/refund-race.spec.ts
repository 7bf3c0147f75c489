import { expect, it } from '@jest/globals';
import type { PaymentRefund } from '../../lib/core/api/index.js';
import { refundOnce } from '../../lib/core/settlement/index.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';

// Two first refunds of one payment at once (a double click on the desk's "Refund this duplicate"
// reaching two instances, two platform refunds racing) send exactly one. Each reads no refund
// record, then looks at an earlier version's markers (legacyRefund), taking a marker for an
// instant: the other's look found it busy and read it as an earlier version's refund whose answer
// was lost, so both answered `unknown` and none was sent (found by desk.instances.e2e-spec.ts's
// double submit across two instances, on Redis; failed here every time before the fix).

it('two first refunds of one payment at once send exactly one; the other finds it made', async () => {
  const store = new MemoryPaymentsStore();
  let calls = 0;
  const deps = {
    store,
    registration: undefined,
    refund: async (paymentId: string): Promise<PaymentRefund> => {
      calls++;
      await new Promise((r) => setTimeout(r, 50));
      return { refundId: 'r1', paymentId, amount: '7000', status: 'success', refundedAt: '2026-01-01T00:00:00Z' };
    },
  };
  const results = await Promise.all([refundOnce(deps, 'pay_1'), refundOnce(deps, 'pay_1')]);
  // The second looks at the markers again once the first's look let go: by then the refund is made.
  expect({
    calls,
    results: results.map((r) => (r.kind === 'refunded' ? `refunded${r.earlier ? ' earlier' : ''}` : r.kind)).sort(),
  }).toEqual({
    calls: 1,
    results: ['refunded', 'refunded earlier'],
  });
});
