import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { outcomeOf } from '../../lib/core/settlement/settlement.decision.js';
import { PaymentsError, type PaymentOutcomeEvent } from '../../lib/index.js';
import { MemoryPaymentsStore } from '../../lib/store/index.js';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { FakeService, type FakeReply } from '../support/fake-service.js';
import { generateVia, quietLogger, verifyCount } from '../support/outcome-kit.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';
import { collectUnhandledRejections, settle } from '../faults/support/guards.js';

// Random interleavings of the three paths to an outcome (webhook, return = reconcilePayment,
// reconciliation) on TWO client instances sharing one store, against a service whose verify
// answers are random: some answers that settle nothing (PENDING, an unknown status, 429, 503,
// a hang past timeoutMs), then a final status that stays (SUCCESS, FAILURE, SYSTEM_FAILURE,
// EXPIRED, SUCCESS for another amount, or PENDING for ever). Handlers fail their first 0-2 runs.
//
// Properties, per payment:
// 1. handlers never run concurrently, and run to success at most once; after a final drain
//    (reconciliation until settled) exactly once when the final status is final;
// 2. every handler run is the outcome of the final status: never `confirmed` unless the service
//    answered SUCCESS with the amount that was sent; a mismatch runs the mismatch callback once;
// 3. the verify budget (proved bound): every path invocation costs at most one verify call, and
//    a final answer is fetched at most (1 + failed handler runs) times, i.e.
//        verify calls <= transient answers served + failed handler runs + 1,
//    and no verify call at all once the handlers succeeded (later paths find it done).
// Returns run in their own step (not concurrently): a return that finds the payment busy waits up
// to 3 s for the other path, which would only slow the run down.

const RUNS = Math.max(20, Math.round(Number(process.env.PROPERTY_RUNS ?? 1500) / 15));
const SECRET = 'whsec_outcomes_property_0123456789abcdef';
const TIMEOUT_MS = 80;
const AMOUNT = 4000;

type Transient = 'PENDING' | 'UNKNOWN' | '429' | '503' | 'hang';
type Final = 'SUCCESS' | 'FAILURE' | 'SYSTEM_FAILURE' | 'EXPIRED' | 'SUCCESS_OTHER_AMOUNT' | 'PENDING_FOREVER';
interface Script {
  transients: Transient[];
  final: Final;
  failTimes: number;
}
type Step = { path: 'webhook' | 'return' | 'reconciliation'; client: 0 | 1; payment: number; concurrent: boolean };

const transient = fc.constantFrom<Transient>('PENDING', 'PENDING', 'UNKNOWN', '429', '503', 'hang');
const script = fc.record({
  transients: fc.array(transient, { maxLength: 4 }),
  final: fc.constantFrom<Final>(
    'SUCCESS',
    'SUCCESS',
    'SUCCESS',
    'FAILURE',
    'SYSTEM_FAILURE',
    'EXPIRED',
    'SUCCESS_OTHER_AMOUNT',
    'PENDING_FOREVER',
  ),
  failTimes: fc.constantFrom(0, 0, 1, 2),
});
const step = fc.record({
  path: fc.constantFrom<Step['path']>('webhook', 'webhook', 'return', 'reconciliation'),
  client: fc.constantFrom<0 | 1>(0, 1),
  payment: fc.nat(1),
  concurrent: fc.boolean(),
});
const scenario = fc.record({
  scripts: fc.array(script, { minLength: 1, maxLength: 2 }),
  steps: fc.array(step, { minLength: 1, maxLength: 10 }),
});

function reply(answer: Transient | Final): FakeReply {
  switch (answer) {
    case 'PENDING':
    case 'PENDING_FOREVER':
      return { status: 200, body: verifyAnswer({ status: 'PENDING', amount: AMOUNT }) };
    case 'UNKNOWN':
      return { status: 200, body: verifyAnswer({ status: 'IN_REVIEW', amount: AMOUNT }) };
    case '429':
      return { status: 429, body: '', headers: { 'retry-after': '1' } };
    case '503':
      return { status: 503, body: '<html>busy</html>' };
    case 'hang':
      return { hang: true };
    case 'SUCCESS_OTHER_AMOUNT':
      return { status: 200, body: verifyAnswer({ status: 'SUCCESS', amount: AMOUNT + 1 }) };
    default:
      return { status: 200, body: verifyAnswer({ status: answer, amount: AMOUNT }) };
  }
}

const expectedOutcome = (final: Final) =>
  final === 'SUCCESS_OTHER_AMOUNT' ? 'mismatch' : final === 'PENDING_FOREVER' ? 'pending' : outcomeOf(final);

const rejections = collectUnhandledRejections();
let fake: FakeService;
let n = 0;

beforeAll(async () => {
  fake = await FakeService.start();
});
afterAll(async () => {
  await fake.close();
  await settle();
  rejections.stop();
  expect(rejections.seen).toEqual([]);
});

interface Run {
  paymentId: string;
  outcome: string;
  ok: boolean;
  client: number;
  callsBefore: number;
}

describe('webhook, return and reconciliation on two clients sharing a store, against random verify answers', () => {
  it(`${RUNS} random interleavings: handlers once per final outcome, never confirmed without SUCCESS, verify calls within the budget`, async () => {
    let settledSuccess = 0;
    await fc.assert(
      fc.asyncProperty(scenario, async ({ scripts, steps }) => {
        const store = new MemoryPaymentsStore();
        const runs: Run[] = [];
        const active = new Map<string, number>();
        const overlaps: string[] = [];
        const invocations = new Map<string, number>();
        const logged: string[] = [];
        const newClient = (timeoutMs: number) =>
          createPaymentsClient({
            publicKey: 'pk_prop_outcomes',
            privateKey: 'sk_prop_outcomes',
            baseUrl: fake.url,
            successLink: 'https://shop.example/ok',
            failLink: 'https://shop.example/ko',
            sessionTimeoutSecs: 60,
            timeoutMs,
            maxRetries: 0,
            webhook: { publicUrl: 'https://shop.example/hook', secret: SECRET },
            reconciliation: { enabled: false, maxChecks: 1000 },
            logger: quietLogger(logged),
            store,
          });
        const clients: PaymentsClient[] = [newClient(TIMEOUT_MS), newClient(TIMEOUT_MS)];
        // Payments are generated through a client that waits: with the short timeout, a loaded
        // machine could time a generate out, and its late request would then take the next
        // payment's queued answer (the test would pair a payment with another's token).
        const generator = newClient(10_000);
        const scriptOf = new Map<string, Script>();
        const handler = (client: number, outcome: string, mayFail: boolean) => async (event: PaymentOutcomeEvent) => {
          const id = event.paymentId;
          if ((active.get(id) ?? 0) > 0) overlaps.push(id);
          active.set(id, (active.get(id) ?? 0) + 1);
          const callsBefore = verifyCount(fake, id);
          try {
            await settle(1);
            const s = scriptOf.get(id)!;
            const failed = runs.filter((r) => r.paymentId === id && !r.ok).length;
            const ok = !(mayFail && failed < s.failTimes);
            runs.push({ paymentId: id, outcome, ok, client, callsBefore });
            if (!ok) throw new Error('handler told to fail');
          } finally {
            active.set(id, active.get(id)! - 1);
          }
        };
        clients.forEach((client, i) =>
          createWebhookRouter({
            client,
            onPaymentConfirmed: handler(i, 'confirmed', true),
            onPaymentFailed: handler(i, 'failed', true),
            onPaymentExpired: handler(i, 'expired', true),
            onPaymentAuthorized: handler(i, 'authorized', true),
            onPaymentMismatch: handler(i, 'mismatch', false),
          }),
        );
        try {
          const payments: Array<{ paymentId: string; token: string }> = [];
          for (const s of scripts) {
            const p = await generateVia(generator, fake, `pay_prop_outcome_${++n}`, { amount: String(AMOUNT) });
            scriptOf.set(p.paymentId, s);
            fake.reply(verifyPath(p.paymentId), ...s.transients.map(reply));
            fake.always(verifyPath(p.paymentId), reply(s.final));
            payments.push(p);
          }
          let horizon = Date.now() + 120_000 * 1000;
          const invoke = async (st: Step) => {
            const p = payments[st.payment % payments.length];
            const client = clients[st.client];
            if (st.path === 'reconciliation') {
              horizon += 86_400_000;
              for (const q of payments) invocations.set(q.paymentId, (invocations.get(q.paymentId) ?? 0) + 1);
              await client.runReconciliation(horizon);
              return;
            }
            invocations.set(p.paymentId, (invocations.get(p.paymentId) ?? 0) + 1);
            if (st.path === 'webhook') {
              const answer = await client.webhooks.handle({
                query: {},
                body: { payment_id: p.paymentId },
                pathToken: p.token,
              });
              expect([200, 202, 409, 500, 503]).toContain(answer.status);
            } else {
              await client.reconcilePayment(p.paymentId).catch((e: unknown) => {
                if (!(e instanceof PaymentsError)) throw e;
              });
            }
          };
          // Consecutive concurrent steps run together (real interleavings); returns run alone.
          for (let i = 0; i < steps.length;) {
            const batch = [steps[i++]];
            while (i < steps.length && steps[i].concurrent && batch[0].path !== 'return' && steps[i].path !== 'return')
              batch.push(steps[i++]);
            await Promise.all(batch.map(invoke));
            for (const p of payments)
              expect(runs.filter((r) => r.paymentId === p.paymentId && r.ok)).toHaveLength(
                Math.min(1, runs.filter((r) => r.paymentId === p.paymentId && r.ok).length),
              );
          }
          // Drain: reconciliation until every payment with a final status is settled.
          for (const p of payments) {
            const s = scriptOf.get(p.paymentId)!;
            for (let k = 0; k < s.transients.length + s.failTimes + 2; k++) {
              horizon += 86_400_000;
              // A pass is a path invocation for every queued payment.
              for (const q of payments) invocations.set(q.paymentId, (invocations.get(q.paymentId) ?? 0) + 1);
              await clients[k % 2].runReconciliation(horizon);
            }
          }

          for (const p of payments) {
            const s = scriptOf.get(p.paymentId)!;
            const mine = runs.filter((r) => r.paymentId === p.paymentId);
            const succeeded = mine.filter((r) => r.ok);
            const failedRuns = mine.filter((r) => !r.ok).length;
            const expected = expectedOutcome(s.final);
            // 1. once per final outcome, never concurrently
            expect(overlaps).toEqual([]);
            expect(succeeded).toHaveLength(expected === 'pending' ? 0 : 1);
            // 2. every run is the final status's outcome; confirmed only for SUCCESS with the right amount
            expect(new Set(mine.map((r) => r.outcome))).toEqual(new Set(expected === 'pending' ? [] : [expected]));
            if (mine.some((r) => r.outcome === 'confirmed')) expect(s.final).toBe('SUCCESS');
            const record = await store.getOutcome(p.paymentId);
            if (expected !== 'pending')
              expect(record).toMatchObject({
                outcome: expected,
                handlers: expected === 'mismatch' ? 'none' : 'succeeded',
              });
            // 3. the verify budget
            const calls = verifyCount(fake, p.paymentId);
            expect(calls).toBeLessThanOrEqual(invocations.get(p.paymentId) ?? 0);
            if (expected !== 'pending') {
              // A verify answer that came later than TIMEOUT_MS (a loaded machine) was a call that
              // settled nothing, like a hang: count those beyond the scripted hangs as transients.
              const timeouts = logged.filter(
                (l) => l.includes(`could not verify ${p.paymentId}:`) && l.includes('TIMEOUT'),
              ).length;
              const lateAnswers = Math.max(0, timeouts - s.transients.filter((t) => t === 'hang').length);
              expect(calls).toBeLessThanOrEqual(s.transients.length + lateAnswers + failedRuns + 1);
              // The run that succeeded spent the last verify call: nothing after it.
              expect(calls).toBe(succeeded[0].callsBefore);
              if (expected === 'confirmed') settledSuccess++;
            }
          }
        } finally {
          await Promise.all([...clients, generator].map((c) => c.close()));
        }
      }),
      { numRuns: RUNS },
    );
    // The interesting side was exercised.
    expect(settledSuccess).toBeGreaterThan(RUNS / 10);
    // Its interleavings wait on real timers: two Jest workers beside CI's platform suites need more
    // than the default 30 s.
  }, 180_000);
});
