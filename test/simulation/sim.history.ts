import { PaymentsError } from '../../lib/core/api/payments.errors.js';
import type { PaymentEvent, PaymentEventName } from '../../lib/core/settlement/payment.events.js';
import type { PaymentDuplicateEvent, PaymentOutcomeEvent } from '../../lib/core/settlement/payment.events.js';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import { Instance, PRIVATE_KEY, SESSION_SECS_CHOICES, WEBHOOK_SECRET, World, type ModelPayment } from './sim.world.js';
import { Random, VirtualTime } from './sim.time.js';

/*
 * One history of the simulation: a seed draws the stressors, the instances, the orders and what
 * the customers and the service do; the history runs on virtual time; then every promise of the
 * engine is checked against what the model knows. See docs/architecture.md ("The simulation").
 */

/** What can go wrong in a history; each is drawn on or off by the seed. */
export const STRESSORS = [
  'lag',
  'lossy',
  'duplicates',
  'faults',
  'crashes',
  'outage',
  'skew',
  'strangers',
  'slow',
  'failing',
  'twice',
  'steps',
  'longlag',
  'slowstore',
] as const;
/** Stressors drawn from a stream of their own: adding one leaves every older history as it was. */
const OWN_STREAM: readonly Stressor[] = ['steps', 'longlag', 'slowstore'];
export type Stressor = (typeof STRESSORS)[number];

/** The stated bounds the liveness check holds the engine to (docs/confirmations.md). */
export const BOUNDS = {
  /** From the service answering a final status to the handlers done, once a path came after it. */
  askedMs: 30_000,
  /** A payment no path asked about: after its session's end plus grace and one sweep interval. */
  sweepSlackMs: 30_000,
  /** Added when an instance crashed meanwhile (its claim's lease, then the service's redelivery). */
  crashMs: 60_000 + 120_000,
  /** Added when the service rate-limited or hung meanwhile (Retry-After, timeouts and their retries). */
  faultsMs: 90_000,
  /** After a store outage ends (entries a pass took come back after their 120 s lease). */
  afterOutageMs: 150_000,
  /** Added per failed handler run, beyond the sweep's wait for its next check. */
  perFailureMs: 60_000,
  /**
   * A verify that lags a path by L while the session is open: the pending lane backs off, so the
   * handlers run within max(askedMs, L × this) of the final answer (its longest wait against the
   * time in the lane, 60 s after 93 s, and each pass taking what is due within a second early).
   */
  lagFactor: 0.75,
} as const;

const LEASE_MS = 60_000;
const GRACE_MS = 60_000;
const INTERVAL_MS = 60_000;
const T0 = 1_800_000_000_000;

/** What a history found. */
export interface HistoryResult {
  seed: number;
  stressors: Stressor[];
  violations: string[];
  /**
   * Virtual ms from the moment the service's answer was final and a path had reached the plugin
   * to the handlers running, for payments a path asked about.
   */
  latencies: number[];
  /** Payments whose handlers ran to success, and the verify calls spent on them. */
  settled: number;
  settledVerifies: number;
  /** Verify calls spent on ids the plugin never issued. */
  strangerVerifies: number;
  events: number;
}

interface RunState {
  active: number;
  /** When the run in progress started (for the store-outage exception to exclusion). */
  activeSince?: number;
  successes: number;
  failures: number;
  firstSuccessAt?: number;
  names: string[];
  lastSuccess?: { instance: Instance; at: number };
  askedAfterSettle: boolean;
  /** When a path first reached the plugin after the customer paid. */
  firstAskAt?: number;
}

/** A history over a real store (Redis, PostgreSQL) instead of the memory store. */
export interface RealStoreSetup {
  /** The store every instance shares, empty. */
  store: PaymentsStore;
  /**
   * Stressors left out: a real server expires leases and rate limits on its own real clock, which
   * a history on virtual time does not follow, so what needs a lease to lapse (a crash, an outage)
   * cannot be modelled over it.
   */
  without: readonly Stressor[];
}

/** Runs the history of `seed` and checks it (over the memory store unless `real` says otherwise). */
export async function runHistory(seed: number, real?: RealStoreSetup): Promise<HistoryResult> {
  const random = new Random(seed);
  // Drawn alike whatever the store, so that a seed means the same history over each.
  const own = new Random(seed ^ 0x5eed_57e9);
  const stressors = STRESSORS.filter((s) =>
    (OWN_STREAM.includes(s) ? own : random).chance(s === 'strangers' ? 0.25 : 0.3),
  ).filter((s) => !real?.without.includes(s));
  const has = (s: Stressor) => stressors.includes(s);
  const time = new VirtualTime(T0);
  const violations: string[] = [];
  const violate = (message: string) =>
    violations.length < 20 && violations.push(`${(time.now - T0) / 1000}s: ${message}`);
  const storeDown: Array<[number, number]> = [];
  if (has('outage'))
    for (let k = random.int(1, 2); k > 0; k--) {
      const from = T0 + random.between(0, 400_000);
      storeDown.push([from, from + random.between(5_000, 60_000)]);
    }
  const world = new World(
    time,
    random,
    {
      verify503: has('faults') ? 0.1 : 0,
      verify429: has('faults') ? 0.02 : 0,
      verifyHang: has('faults') ? 0.02 : 0,
      storeDown,
      ...(has('slowstore') ? { generateWriteMs: () => own.between(2_000, 15_000) } : {}),
    },
    real?.store,
  );
  const sessionSecs = random.pick(SESSION_SECS_CHOICES);
  const runs = new Map<string, RunState>();
  const state = (id: string): RunState => {
    let s = runs.get(id);
    if (!s) runs.set(id, (s = { active: 0, successes: 0, failures: 0, names: [], askedAfterSettle: false }));
    return s;
  };
  const crashes: Array<{ instance: Instance; at: number }> = [];
  const trace: string[] = [];
  const note = (id: string, what: string) =>
    process.env.SIM_DEBUG === id && trace.push(`${((time.now - T0) / 1000).toFixed(1)}s ${what}`);
  const faultsSeen = { any: false };

  const dispatch = async (instance: Instance, name: PaymentEventName, event: PaymentEvent): Promise<void> => {
    const outcome = event as PaymentOutcomeEvent;
    if (!('verification' in outcome)) return; // operations' events: none in these histories
    const id = outcome.paymentId;
    const model = world.payments.get(id);
    const s = state(id);
    if (name === 'payment.mismatch') return;
    if (name === 'payment.duplicate' && (event as PaymentDuplicateEvent).settledBy.paymentId === id)
      violate(`${id} reported as a duplicate of itself`);
    if (name === 'payment.confirmed' || name === 'payment.duplicate') {
      // Safety: only what the service itself says is paid, for the amount and order it was made for.
      if (!model) violate(`confirmed ${id}, which the service never created`);
      else {
        if (world.statusOf(model) !== 'SUCCESS')
          violate(`confirmed ${id} while the service answers ${world.statusOf(model)}`);
        if (model.reportedAmount !== model.amount || outcome.amount !== model.amount)
          violate(`confirmed ${id} for ${outcome.amount}, made for ${model.amount}`);
        if (model.reportedCurrency !== undefined)
          violate(`confirmed ${id}, which the service reports in currency ${model.reportedCurrency}`);
        if (outcome.developerTrackingId !== model.trackingId)
          violate(
            `confirmed ${id} for order ${String(outcome.developerTrackingId)}, made for ${String(model.trackingId)}`,
          );
      }
    }
    // Exclusion holds while the store answers: a lease cannot be renewed while the store is away,
    // so an outage long enough for the running one's lease to lapse is the documented exception.
    if (s.active > 0 && !leaseCouldLapse(s.activeSince ?? time.now)) violate(`handlers of ${id} ran concurrently`);
    if (s.lastSuccess && !excused(s.lastSuccess))
      violate(`handlers of ${id} ran again after they succeeded (${s.names.join(', ')}, then ${name})`);
    s.active++;
    const startedAt = time.now;
    s.activeSince = startedAt;
    note(id, `handler ${name} starts on #${instance.index}`);
    let open = true;
    const close = () => {
      if (!open) return;
      open = false;
      s.active--;
    };
    instance.onCrash.push(close);
    const duration = has('slow') && random.chance(0.3) ? random.between(1_000, 90_000) : random.between(0, 200);
    await instance.io(
      () => undefined,
      () => duration,
    );
    close();
    if (has('failing') && random.chance(0.25)) {
      s.failures++;
      throw new Error('the shop database is busy (simulated)');
    }
    s.successes++;
    s.names.push(name);
    s.lastSuccess = { instance, at: time.now };
    // The bound is on when the engine ran the handlers, not on how long the shop's own code takes.
    s.firstSuccessAt ??= startedAt;
  };

  const leaseCouldLapse = (since: number) =>
    storeDown.some(([from, to]) => Math.min(to, time.now) - Math.max(from, since - LEASE_MS) >= LEASE_MS / 3);

  // A second successful run is the at-least-once gap only when the first run's instance died, or
  // the store failed, before the done marker could be written.
  const excused = (last: { instance: Instance; at: number }) =>
    crashes.some((c) => c.instance === last.instance && c.at >= last.at) || storeDown.some(([, to]) => to >= last.at);

  const skews: number[] = [];
  const instances: Instance[] = [];
  const everStarted: Instance[] = [];
  const start = (index: number) => {
    skews[index] ??= has('skew') ? random.between(-3_600_000, 3_600_000) : 0;
    const instance = new Instance(index, world, skews[index], {
      sessionSecs,
      dispatch,
      jitter: new Random(seed * 64 + everStarted.length),
    });
    instances[index] = instance;
    everStarted.push(instance);
  };
  const count = random.int(2, 3);
  for (let i = 0; i < count; i++) start(i);
  const live = () => instances.filter((i) => i.alive);
  const anyLive = () => (live().length > 0 ? random.pick(live()) : undefined);

  const callerErrors = (where: string) => (error: unknown) => {
    if (!(error instanceof PaymentsError)) violate(`${where} threw ${String(error)}`);
    else leakCheck(`${where} error`, error.message, violate);
  };

  // A path that reached the plugin while the store was down could not be remembered by it: the
  // bound then is the sweep's (or the next path's).
  const asked = (id: string) => {
    if (world.storeIsDown()) return;
    const s = state(id);
    s.askedAfterSettle = true;
    s.firstAskAt ??= time.now;
  };

  // The webhook the service sends, retried on anything but 2xx (backoff 5 s, doubling, 6 tries).
  const deliver = (payment: ModelPayment, attempt: number) => {
    const instance = anyLive();
    const retry = () => attempt < 6 && time.after(5_000 * 2 ** attempt, () => deliver(payment, attempt + 1));
    if (!instance || !payment.webhookUrl || (has('lossy') && random.chance(0.4))) return void retry();
    if (attempt === 0 && has('lossy') && random.chance(0.5)) return; // this webhook is never sent
    if (payment.settleAt !== undefined && time.now >= payment.settleAt) asked(payment.id);
    const url = new URL(payment.webhookUrl);
    let answered = false;
    const timeout = time.after(30_000, () => !answered && ((answered = true), retry()));
    note(payment.id, `webhook attempt ${attempt} to #${instance.index}`);
    instance.client.webhooks
      .handle({ query: {}, body: { payment_id: payment.id }, pathToken: url.pathname.split('/').pop() })
      .then(
        (answer) => {
          note(payment.id, `webhook answered ${answer.status}`);
          if (answered) return;
          answered = true;
          timeout.cancelled = true;
          if (answer.status < 200 || answer.status >= 300) retry();
        },
        (error: unknown) => violate(`webhook threw ${String(error)}`),
      );
  };

  // The customer back on the return page: reloads while it says "processing".
  const returnTo = (payment: ModelPayment, reloads: number) => {
    const instance = anyLive();
    if (!instance) return;
    if (payment.settleAt !== undefined && time.now >= payment.settleAt) asked(payment.id);
    note(payment.id, `return starts on #${instance.index}`);
    instance.client
      .reconcilePayment(payment.id, { expected: { amount: payment.amount, developerTrackingId: payment.trackingId } })
      .then(
        (result) => {
          note(payment.id, `return on #${instance.index}: ${result.outcome}`);
          if (result.outcome === 'pending' && reloads > 0 && random.chance(0.8))
            time.after(random.between(5_000, 20_000), () => returnTo(payment, reloads - 1));
        },
        (error: unknown) => {
          note(payment.id, `return failed: ${String(error)}`);
          callerErrors('reconcilePayment')(error);
        },
      );
  };

  // The orders: each generated on some instance, then paid (or not) by its customer.
  // The orders: each generated on some instance, then paid (or not) by its customer; with `twice`,
  // some customers open a second payment for the same order (another tab) and may pay both.
  const checkout = (k: number, amount: string, idempotencyKey?: string) => {
    const instance = anyLive();
    if (!instance) return;
    instance.client
      .generatePayment({ amount, developerTrackingId: `order-${k}` }, idempotencyKey ? { idempotencyKey } : undefined)
      .then((generated) => {
        const payment = world.payments.get(generated.paymentId);
        if (!payment)
          return violate(`generatePayment answered ${generated.paymentId}, which the service never created`);
        if (payment.settleAt !== undefined) return; // the open payment's link again: paid once
        if (!random.chance(0.85)) return; // the customer walks away: EXPIRED at the session's end
        payment.settleAt = time.now + random.between(3_000, sessionSecs * 600);
        payment.outcome = random.chance(0.85) ? 'SUCCESS' : 'FAILURE';
        if (random.chance(0.05)) {
          // Some service-side mismatches are in another currency (chosen without a draw of their own,
          // so that a seed replays the rest of its history as before).
          if (Number(amount) % 1_000 === 0) payment.reportedCurrency = '840';
          else payment.reportedAmount = String(Number(amount) + 1_000);
        }
        note(payment.id, `generated on #${instance.index}`);
        payment.lagMs = has('lag') ? random.between(0, 8_000) : random.chance(0.3) ? random.between(0, 2_000) : 0;
        if (has('longlag')) longLag(own, payment);
        if (has('slowstore') && own.chance(0.5)) {
          // The customer pays at once, before the slow store took generatePayment's write, and
          // verify lags the webhook: the webhook's pending-lane entry must survive that write.
          payment.settleAt = time.now + own.between(500, 4_000);
          payment.lagMs = own.between(2_000, 8_000);
        }
        note(
          payment.id,
          `will settle at ${((payment.settleAt - T0) / 1000).toFixed(1)}s, final at ${((payment.settleAt + payment.lagMs - T0) / 1000).toFixed(1)}s (${payment.outcome})`,
        );
        time.at(payment.settleAt + random.between(0, 1_500), () => deliver(payment, 0));
        if (has('duplicates')) time.at(payment.settleAt + random.between(0, 60_000), () => deliver(payment, 5));
        if (random.chance(0.6)) time.at(payment.settleAt + random.between(500, 6_000), () => returnTo(payment, 4));
        if (payment.outcome === 'FAILURE' && random.chance(0.5))
          time.at(payment.settleAt + payment.lagMs + random.between(2_000, 60_000), () =>
            tryAgain(k, amount, payment.id, idempotencyKey),
          );
      }, callerErrors('generatePayment'));
  };

  // The customer whose card was declined clicks "try again": once any instance has recorded the
  // failure in the shared store, the order's checkout must not answer the declined payment again.
  const tryAgain = (k: number, amount: string, declined: string, idempotencyKey?: string) => {
    const instance = anyLive();
    if (!instance) return;
    const store = instance.client.store;
    // A store that is down proves nothing either way: the retry is still made, unchecked.
    store
      .getOutcome(declined)
      .catch(() => undefined)
      .then(async (record) => {
        const again = await instance.client.generatePayment(
          { amount, developerTrackingId: `order-${k}` },
          idempotencyKey ? { idempotencyKey } : undefined,
        );
        note(
          declined,
          `try again on #${instance.index} (recorded ${record?.outcome ?? 'nothing'}): ${again.paymentId}`,
        );
        if (record?.outcome === 'failed' && again.paymentId === declined)
          violate(`order-${k}: "try again" answered ${declined}, recorded failed, instead of a new payment`);
      })
      .catch(callerErrors('generatePayment (try again)'));
  };
  const orders = random.int(3, 6);
  for (let k = 0; k < orders; k++) {
    time.after(random.between(0, 60_000), () => {
      const amount = String(random.int(1, 500) * 500);
      checkout(k, amount);
      if (has('twice') && random.chance(0.5))
        time.after(random.between(0, 5_000), () => checkout(k, amount, `tab-2-${k}`));
    });
  }

  // Strangers typing ids into the return page: a small pool that comes back, and fresh ones.
  const strangerIds = Array.from({ length: 8 }, (_, i) => `pay_x${seed % 1000}_${i}`);
  const strangersSeen = new Set<string>();
  const horizon = T0 + 60_000 + sessionSecs * 1000 + GRACE_MS + INTERVAL_MS + 600_000;
  if (has('strangers')) {
    // Bursts of invented ids on the return page, at random times.
    for (let burst = random.int(1, 3); burst > 0; burst--) {
      const from = T0 + random.between(0, sessionSecs * 1000);
      for (let k = 0; k < 40; k++) {
        time.at(from + random.between(0, 20_000), () => {
          const id = random.chance(0.5) ? random.pick(strangerIds) : `pay_y${seed % 1000}_${k}_${random.int(0, 1e6)}`;
          strangersSeen.add(id);
          anyLive()?.client.reconcilePayment(id).catch(callerErrors('reconcilePayment (stranger)'));
        });
      }
    }
  }

  if (has('crashes')) {
    for (let k = random.int(1, 3); k > 0; k--) {
      time.at(T0 + random.between(0, sessionSecs * 1000), () => {
        const victim = anyLive();
        if (!victim) return;
        victim.crash();
        crashes.push({ instance: victim, at: time.now });
        time.after(random.between(1_000, 30_000), () => start(victim.index));
      });
    }
  }

  if (has('steps')) stepClocks(own, time, T0 + sessionSecs * 1000, () => live());

  await time.runUntil(horizon);
  faultsSeen.any = has('faults');

  // One order, one charge: at most one payment of an order is confirmed.
  const confirmedOf = new Map<string, string>();
  for (const payment of world.payments.values()) {
    if (!state(payment.id).names.includes('payment.confirmed') || payment.trackingId === undefined) continue;
    const other = confirmedOf.get(payment.trackingId);
    if (other !== undefined) violate(`order ${payment.trackingId} confirmed twice: ${other} and ${payment.id}`);
    confirmedOf.set(payment.trackingId, payment.id);
  }

  // Duplicate refunds: a payment is refunded at most once, and never the one that paid its order.
  for (const [id, refunds] of world.ledger.refunds) {
    if (refunds > 1) violate(`${id} refunded ${refunds} times`);
    const payment = world.payments.get(id);
    if (payment?.trackingId !== undefined && confirmedOf.get(payment.trackingId) === id)
      violate(`${id} refunded, yet it is the payment that paid its order`);
  }

  // Liveness, budget and the record, payment by payment.
  const latencies: number[] = [];
  let settled = 0;
  let settledVerifies = 0;
  for (const payment of world.payments.values()) {
    const s = state(payment.id);
    const final = world.statusOf(payment);
    const mismatch =
      (payment.reportedAmount !== payment.amount || payment.reportedCurrency !== undefined) &&
      (final === 'SUCCESS' || final === 'FAILURE');
    if (mismatch) {
      if (s.names.includes('payment.confirmed')) violate(`${payment.id}: a mismatch was confirmed`);
      continue;
    }
    const queued = await world.store.findPending(payment.id);
    const record = await world.store.getOutcome(payment.id);
    const known = record !== undefined || queued !== undefined || s.successes > 0;
    if (!known) continue; // generate failed after the service created it: the customer never got a link
    const finalAt = world.finalAt(payment);
    // One order, one charge: of an order's successful payments one is confirmed, the others duplicates.
    const settledBy = confirmedOf.get(payment.trackingId ?? '');
    const paidTwice = final === 'SUCCESS' && settledBy !== undefined && settledBy !== payment.id;
    const expectedName = paidTwice
      ? 'payment.duplicate'
      : final === 'SUCCESS'
        ? 'payment.confirmed'
        : final === 'FAILURE'
          ? 'payment.failed'
          : 'payment.expired';
    if (s.names.length > 0 && s.names[0] !== expectedName)
      violate(`${payment.id}: ran ${s.names[0]} for a payment the service answers ${final}`);
    // From when the plugin could know: the service's answer is final and a path told the plugin.
    const knownAt = Math.max(finalAt, s.firstAskAt ?? finalAt);
    const sweepDeadline = Math.max(finalAt, payment.sessionEndsAt) + GRACE_MS + INTERVAL_MS + BOUNDS.sweepSlackMs;
    const laneLag = Math.max(0, finalAt - (s.firstAskAt ?? finalAt));
    let deadline = s.askedAfterSettle ? knownAt + Math.max(BOUNDS.askedMs, laneLag * BOUNDS.lagFactor) : sweepDeadline;
    // A crash before the handlers succeeded (one may have been running them): its lease, then the
    // service's redelivery; a service that loses its redeliveries leaves it to the sweep.
    for (const c of crashes)
      if (c.at >= finalAt - 2 * LEASE_MS && c.at <= (s.firstSuccessAt ?? horizon)) {
        deadline = Math.max(deadline + BOUNDS.crashMs, c.at + BOUNDS.crashMs);
        if (has('lossy')) deadline = Math.max(deadline, sweepDeadline);
      }
    if (has('faults')) deadline += BOUNDS.faultsMs;
    for (const [, to] of storeDown)
      if (to >= finalAt - LEASE_MS * 2)
        deadline = Math.max(deadline, to + BOUNDS.afterOutageMs) + (has('faults') ? BOUNDS.faultsMs : 0);
    // A failing handler runs again on the next delivery, return or sweep check (the sweep's fast
    // lane: waits doubling from the interval).
    for (let k = 0; k < s.failures; k++)
      deadline += Math.min(3_600_000, INTERVAL_MS * 2 ** (k + 1)) + BOUNDS.perFailureMs;
    if (s.firstSuccessAt === undefined) {
      if (deadline <= horizon)
        violate(
          `${payment.id} (${final}, final at ${(finalAt - T0) / 1000}s) was never handled (bound ${(deadline - T0) / 1000}s)`,
        );
      continue;
    }
    if (s.firstSuccessAt > deadline)
      violate(
        `${payment.id} handled ${(s.firstSuccessAt - knownAt) / 1000}s after the service's final answer reached the plugin (bound ${(deadline - knownAt) / 1000}s)`,
      );
    if (s.askedAfterSettle && payment.settleAt !== undefined && final !== 'EXPIRED')
      latencies.push(s.firstSuccessAt - knownAt);
    // The budget: a final answer is fetched once, plus once per failed handler run or interruption.
    const finals = world.ledger.finalAnswers.get(payment.id) ?? 0;
    const interruptions = crashes.length + storeDown.length;
    if (finals > 1 + s.failures + interruptions)
      violate(`${payment.id}: the service's final answer was fetched ${finals} times`);
    settled++;
    settledVerifies += world.ledger.verifies.get(payment.id) ?? 0;
  }
  let strangerVerifies = 0;
  for (const id of strangersSeen) {
    strangerVerifies += world.ledger.verifies.get(id) ?? 0;
    const notFound = world.ledger.notFound.get(id) ?? 0;
    if (notFound > everStarted.length)
      violate(`stranger id ${id} answered 404 ${notFound} times across ${everStarted.length} instance(s)`);
  }
  // Each instance: a burst of 5 verifies for unknown ids, then one per 12 s (a burst lasts 20 s),
  // plus the transport's retries of an attempt that failed.
  const strangerBound = everStarted.length * 3 * (5 + 2) * (has('faults') ? 3 : 1);
  if (strangerVerifies > strangerBound)
    violate(`strangers' ids cost ${strangerVerifies} verify calls (bound ${strangerBound})`);
  for (const line of world.ledger.logs) leakCheck('a log line', line, violate);
  if (process.env.SIM_DEBUG)
    trace.push(
      `store down: ${storeDown.map(([a, b]) => `${(a - T0) / 1000}-${(b - T0) / 1000}s`).join(' ')}; crashes: ${crashes.map((c) => `#${c.instance.index}@${(c.at - T0) / 1000}s`).join(' ')}; session ${sessionSecs}s`,
    );
  if (process.env.SIM_DEBUG)
    process.stdout.write(
      `${[...trace, ...world.ledger.logs.filter((l) => process.env.SIM_DEBUG === "all" || l.includes(process.env.SIM_DEBUG as string))].join('\n')}\n`,
    );

  return { seed, stressors, violations, latencies, settled, settledVerifies, strangerVerifies, events: time.ran };
}

/**
 * Clocks stepping both ways (an NTP step, a VM restored from a snapshot) during the sessions: an
 * instance's wall clock jumps by seconds to half an hour, back or forward, and stays there. The
 * shared clock must notice and measure its offset to the store again, or a step back stops the
 * sweep for its length (liveness checks the rest).
 */
function stepClocks(own: Random, time: VirtualTime, until: number, live: () => Instance[]): void {
  for (let k = own.int(1, 3); k > 0; k--) {
    const at = own.between(time.now, until);
    const stepMs = (own.chance(0.6) ? -1 : 1) * own.between(5_000, 1_800_000);
    const which = own.next();
    time.at(at, () => {
      const instances = live();
      if (instances.length > 0) instances[Math.floor(which * instances.length)].clock.stepMs += stepMs;
    });
  }
}

/**
 * Verify lagging the webhook by far more than the pending lane's fixed waits (seconds up to the
 * rest of the session), for about half the paid payments: the lane must keep checking, backing off,
 * until the session ends, and stay within the verify budget.
 */
function longLag(own: Random, payment: ModelPayment): void {
  const room = payment.sessionEndsAt - (payment.settleAt ?? payment.sessionEndsAt) - 1_000;
  if (room > 10_000 && own.chance(0.5)) payment.lagMs = own.between(10_000, room);
}

const SECRET_RUNS = new Set<string>();
for (const secret of [PRIVATE_KEY, WEBHOOK_SECRET])
  for (let i = 0; i + 8 <= secret.length; i++) SECRET_RUNS.add(secret.slice(i, i + 8));

/** No run of 8 characters of the private key or the webhook secret, in any text the engine let out. */
function leakCheck(where: string, text: string, violate: (m: string) => void): void {
  for (let i = 0; i + 8 <= text.length; i++) {
    if (SECRET_RUNS.has(text.slice(i, i + 8)))
      return void violate(`${where} carries part of a secret: ${text.slice(0, 120)}`);
  }
}
