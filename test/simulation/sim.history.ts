import { PaymentsError, PaymentsValidationError } from '../../lib/core/api/payments.errors.js';
import type { PaymentEvent, PaymentEventName } from '../../lib/core/settlement/payment.events.js';
import type {
  PaymentDuplicateEvent,
  PaymentOutcomeEvent,
  PaymentRefundedEvent,
} from '../../lib/core/settlement/payment.events.js';
import type { PaymentsStore } from '../../lib/core/store/store.ports.js';
import { outcomeKey } from '../../lib/core/settlement/settlement.attempt.js';
import { unpaidSlots } from '../../lib/core/settlement/settlement.evidence.js';
import { checkoutKey, orderLedgerKey } from '../../lib/core/settlement/settlement.orders.js';
import type { OrderLedger } from '../../lib/core/store/store.ports.js';
import {
  Instance,
  SECRETS,
  SESSION_SECS_CHOICES,
  WEBHOOK_SECRET,
  WEBHOOK_SECRET_NEXT,
  World,
  type ModelPayment,
} from './sim.world.js';
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

/**
 * Further faults and situations, drawn from a stream of their own (so that adding one leaves the
 * draws of the stressors above, and the pinned seeds' histories, as they were):
 * - `echo`: the service echoes the credentials and the webhook secret in its answers;
 * - `mismatches`: verify names another order for some payments;
 * - `partition`: one instance cannot reach the store for a while, the others can;
 * - `early`: webhooks arrive before the payment's record (right after the service created it);
 * - `rotation`: the instances are mid-rotation of the webhook secret (each signs with one, accepts both);
 * - `accounts`: another registration (merchant account) of the app, whose route some deliveries reach;
 * - `reorder`: orders generated again (same amount while open, a changed amount, after the outcome);
 * - `refunds`: duplicates refunded (`duplicates: { refund: true }`);
 * - `edits`: customers edit the return URL's payment id to another of the shop's payments;
 * - `evictions`: the memory store keeps two token bindings (webhooks then rely on their tokens' claims).
 */
export const EXTRAS = [
  'echo',
  'mismatches',
  'partition',
  'early',
  'rotation',
  'accounts',
  'reorder',
  'refunds',
  'edits',
  'evictions',
] as const;
/**
 * Situations drawn from a stream of their own, one each (so that the draws above stay as they were):
 * - `transactional`: the store is `PostgresPaymentsStore(pool, { transactional: true })`: the store
 *   and the shop's tables are one database (sim.transaction.ts); the handlers of confirmed, failed
 *   and expired payments write the shop's rows through their transaction. Some of these histories
 *   crash instances right after a statement of a transaction reached the database, lose a COMMIT's
 *   answer, or stall a process in the middle of a handler for longer than the claim's lease (a
 *   GC pause, a paused VM: the claim is lost meanwhile, and another attempt runs the handlers).
 * - `inbox` (half the transactional histories, a stream of its own): the database is the host's
 *   own, reached through the client's `inbox` option, and the store a plain one beside it: the
 *   handlers' rows and the inbox row commit together, the store's done marker after them, so the
 *   crashes after a COMMIT fall between the two (docs/exactly-once.md, "The inbox").
 */
export const OWN_EXTRAS = ['transactional', 'commitcrashes', 'stalls', 'lostcommits', 'inbox'] as const;
/**
 * Situations of the order rules, drawn from a stream of their own (so that every history without
 * them stays as it was):
 * - `superseded`: two tabs, the cart changed between them: an order is generated again at another
 *   amount while its payment is open (a new payment, the open one recorded superseded), and the
 *   customer pays the superseded one too. While nobody settled the order it must be a mismatch,
 *   never confirmed (docs/confirmations.md, "Two tabs, the cart changed");
 * - `holds`: a pre-authorization of an order (its own checkout), held before or after another
 *   payment paid the order: held after, it is a duplicate, never `payment.authorized`; and a hold
 *   never settles its order ("A pre-authorization of a paid order").
 */
export const ORDER_SITUATIONS = ['superseded', 'holds'] as const;
/**
 * Customers' behaviours, drawn from a stream of their own (every history without them stays as it was):
 * - `unpaid`: customers who walk away come back to the return page anyway, 2 to 5 times during the
 *   session, on any instance, without paying (an abandoned checkout): each such payment costs at
 *   most 3 verify calls while its session is open (docs/confirmations.md, "The call budget").
 */
export const BEHAVIOURS = ['unpaid'] as const;
/**
 * Situations of the return page, drawn from a stream of their own (every history without them stays as it was):
 * - `storeclock` (histories whose verify lags by minutes, over the memory store, neither transactional nor lossy):
 *   the store's clock steps back by minutes (a failover to a replica whose clock is behind, an NTP
 *   correction of the database server) while a paid payment's verify lags: its pending record,
 *   written before, is then dated in the future, and its customer reloads the return page once the
 *   instances measured the store's clock again. A pending record dated in the future is not
 *   "recent" (docs/confirmations.md, "One notion of time"): no return page answered `pending` by it.
 * - `editrace`: a customer edits the return URL to name a payment just as another path finishes it,
 *   so that the return's two reads straddle the store's write of its outcome (the record not there
 *   yet, the queue entry gone already): the return answers from the record, which it checks again
 *   (docs/confirmations.md, "The return page cannot be fooled after the fact").
 */
export const RETURN_SITUATIONS = ['storeclock', 'editrace'] as const;
/**
 * Situations of the shared time, drawn from a stream of their own (every history without them stays as it was):
 * - `slowclock` (histories whose verify lags by minutes, without clock steps): once an instance measured the store's clock, some of its later readings come back
 *   12 to 30 s late (a congested return path; the store read its clock at once): the earlier
 *   measurement's offset, which the round trip still allows, is kept, so the times the instance
 *   writes stay the store's (docs/confirmations.md, "One notion of time").
 * - `unsynced` (not over a real store): a reconciliation worker (no traffic of its own) starts with
 *   its clock minutes to an hour ahead while the store is out of its reach; its path to the store
 *   comes back just after its first pass failed to read the store's clock, before the pass would
 *   take the queue. A pass on a clock that never reached the store's takes nothing: no pass takes the
 *   queue ahead of the store's clock (docs/confirmations.md, "One notion of time": an instance an
 *   hour ahead cannot make the others check an hour early).
 */
export const TIME_SITUATIONS = ['slowclock', 'unsynced'] as const;
/**
 * Situations of the claim's lease, drawn from a stream of their own (every history without them stays as it was):
 * - `lapse` (neither transactional nor over a real store): a process is frozen mid-handler for
 *   longer than the claim's lease (a long GC pause, a suspended VM), and its handler throws once it
 *   resumes; meanwhile another path may take the lapsed claim and settle the payment. The frozen
 *   attempt then only gives the claim back: the record stays what the attempt that took the claim
 *   wrote, never a failure recorded by an attempt that no longer held it (docs/confirmations.md,
 *   "Delivery is effectively-once").
 */
export const LEASE_SITUATIONS = ['lapse'] as const;
export type Extra =
  | (typeof EXTRAS)[number]
  | (typeof OWN_EXTRAS)[number]
  | (typeof ORDER_SITUATIONS)[number]
  | (typeof BEHAVIOURS)[number]
  | (typeof RETURN_SITUATIONS)[number]
  | (typeof TIME_SITUATIONS)[number]
  | (typeof LEASE_SITUATIONS)[number];

/** The longest lag of verify behind a return the short lane's checks reach (settlement.evidence.ts: 10 s + 25 s). */
const SHORT_LANE_REACH_MS = 35_000;

/** Verify calls an abandoned checkout may cost while its session is open, whatever its returns (docs/confirmations.md). */
export const UNPAID_BUDGET = 3;

/** The events whose handlers run in the transaction of a transactional store (docs/exactly-once.md). */
const TRANSACTIONAL_EVENTS: readonly PaymentEventName[] = [
  'payment.confirmed',
  'payment.failed',
  'payment.expired',
  'payment.authorized',
];

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
/** generatePayment's record retried while the store is away: at most this long after it is back (its 5 s wait, one try). */
const RECORD_RETRY_SLACK_MS = 10_000;
/** The longest a slow shop's handler runs (the `slow` stressor). */
const SLOW_HANDLER_MS = 90_000;
/** The least lag of verify behind a payment that `storeclock` steps the store's clock during (its customer comes back up to 2 min after paying). */
const STORE_STEP_MIN_LAG_MS = 150_000;
/** The verify budget's interval per payment and instance (SETTLEMENT_WAITS.verifyIntervalMs). */
const VERIFY_INTERVAL_MS = 10_000;
/** `handlers.timeoutMs` of the instances (sim.world.ts). */
const HANDLERS_TIMEOUT_MS = 120_000;
const GRACE_MS = 60_000;
const INTERVAL_MS = 60_000;
const T0 = 1_800_000_000_000;

/** What a history found. */
export interface HistoryResult {
  seed: number;
  stressors: Array<Stressor | Extra>;
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
  /** When each run that failed (its handler threw) began. */
  failedSince: number[];
  firstSuccessAt?: number;
  names: string[];
  lastSuccess?: { instance: Instance; at: number; since?: number };
  askedAfterSettle: boolean;
  /** When a path first reached the plugin after the customer paid. */
  firstAskAt?: number;
  /** When a webhook first reached the plugin once it was paid (the evidence of lag, settlement.evidence.ts). */
  webhookAskAt?: number;
  /** `payment.mismatch` events emitted for it. */
  mismatches: number;
  /** The order's settling payment each `payment.duplicate` of it named. */
  settledBy: Array<{ paymentId: string; amount: string }>;
  /** `payment.refunded` events of it, with the payment each named as the order's. */
  refunded: Array<string | undefined>;
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
  const drawn = STRESSORS.filter((s) =>
    (OWN_STREAM.includes(s) ? own : random).chance(s === 'strangers' ? 0.25 : 0.3),
  ).filter((s) => !real?.without.includes(s));
  // Their own stream: the draws above, and every later draw of `random`, stay what they were.
  const more = new Random(seed * 7_919 + 104_729);
  const extras = EXTRAS.filter((e) => more.chance(e === 'partition' || e === 'evictions' ? 0.15 : 0.25)).filter(
    (e) => !(e === 'evictions' && real) && !(e === 'partition' && real?.without.includes('outage')),
  );
  // The transactional mode models its database over the memory store (sim.transaction.ts).
  const txr = new Random(seed * 104_723 + 7);
  const transactional = !real && txr.chance(0.3);
  const tx = {
    crashes: transactional && txr.chance(0.5),
    stalls: transactional && txr.chance(0.5),
    lostCommits: transactional && txr.chance(0.3),
  };
  // Its own stream: every history without the transactional mode stays as it was.
  const inboxMode = transactional && new Random(seed * 15_485_863 + 11).chance(0.5);
  // The order settles in the store's transaction only when the store is transactional (not with the inbox).
  const storeTx = transactional && !inboxMode;
  const sit = new Random(seed * 6_700_417 + 29);
  const situations = ORDER_SITUATIONS.filter(() => sit.chance(0.3));
  const situation = (s: (typeof ORDER_SITUATIONS)[number]) => situations.includes(s);
  const unp = new Random(seed * 15_485_863 + 11);
  const unpaidReturns = !real && unp.chance(0.3);
  const ret = new Random(seed * 49_979_687 + 13);
  const [stepDrawn, raceDrawn] = [ret.chance(0.5), ret.chance(0.25)];
  // (Over lossy deliveries the lagging payment's redeliveries may be lost; the step is for a return page.)
  const storeClock = !real && !transactional && drawn.includes('longlag') && !drawn.includes('lossy') && stepDrawn;
  const editRace = !real && raceDrawn;
  // Each situation's own draws, apart from every other stream.
  const stepDraws = new Random(seed * 49_979_687 + 101);
  const raceDraws = new Random(seed * 49_979_687 + 211);
  const clk = new Random(seed * 49_979_687 + 401);
  // (Not with clock steps, the instances' or the store's: a measurement after a step moves the
  // offset to the nearer bound, which a late answer puts off by its delay, as documented. Only in
  // histories whose verify lags by minutes, which the latency percentiles leave out already: a
  // late answer delays whatever waits on the shared time.)
  const slowClock = clk.chance(0.5) && !real && drawn.includes('longlag') && !drawn.includes('steps') && !storeClock;
  // `lapse` and `unsynced`, each from a stream of its own.
  const lapses = new Random(seed * 49_979_687 + 503);
  const lapse = !real && !transactional && lapses.chance(0.2);
  const uns = new Random(seed * 49_979_687 + 601);
  const unsynced = !real && uns.chance(0.15);
  const stressors: Array<Stressor | Extra> = [
    ...(unpaidReturns ? (['unpaid'] as const) : []),
    ...drawn,
    ...extras,
    ...situations,
    ...(transactional ? (['transactional'] as const) : []),
    ...(tx.crashes ? (['commitcrashes'] as const) : []),
    ...(tx.stalls ? (['stalls'] as const) : []),
    ...(tx.lostCommits ? (['lostcommits'] as const) : []),
    ...(inboxMode ? (['inbox'] as const) : []),
    ...(storeClock ? (['storeclock'] as const) : []),
    ...(editRace ? (['editrace'] as const) : []),
    ...(slowClock ? (['slowclock'] as const) : []),
    ...(unsynced ? (['unsynced'] as const) : []),
    ...(lapse ? (['lapse'] as const) : []),
  ];
  const has = (s: Stressor) => drawn.includes(s);
  const extra = (e: (typeof EXTRAS)[number]) => extras.includes(e);
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
  const partitions: Array<{ index: number; from: number; to: number }> = [];
  if (extra('partition'))
    for (let k = more.int(1, 2); k > 0; k--) {
      const from = T0 + more.between(0, 400_000);
      partitions.push({ index: more.int(0, 2), from, to: from + more.between(5_000, 60_000) });
    }
  // For the bounds and the exceptions, an instance cut off from the store is an outage of its own.
  const interrupted: Array<[number, number]> = [
    ...storeDown,
    ...partitions.map((p): [number, number] => [p.from, p.to]),
  ];
  const world = new World(
    time,
    random,
    {
      verify503: has('faults') ? 0.1 : 0,
      verify429: has('faults') ? 0.02 : 0,
      verifyHang: has('faults') ? 0.02 : 0,
      storeDown,
      ...(has('slowstore') ? { generateWriteMs: () => own.between(2_000, 15_000) } : {}),
      partitions,
      echo: extra('echo'),
      ...(transactional
        ? {
            transactional: {
              commitAnswerLost: () => {
                const lost = tx.lostCommits && txr.chance(0.1);
                if (lost) lostCommitAnswers++;
                return lost;
              },
              // A crash at any statement of a transaction: before it is sent, or once it reached the
              // database and before its answer.
              beforeStatement: (instance: Instance) => {
                if (tx.crashes && txr.chance(0.02)) crash(instance, txr.between(1_000, 30_000));
              },
              afterStatement: (instance: Instance) => {
                if (tx.crashes && txr.chance(0.02)) crash(instance, txr.between(1_000, 30_000));
              },
            },
            inbox: inboxMode,
          }
        : {}),
    },
    real?.store,
    extra('evictions') ? 2 : 1_000,
  );
  const sessionSecs = random.pick(SESSION_SECS_CHOICES);
  const ledger = world.store as unknown as OrderLedger;
  /** Superseded payments the customer paid (their order's checkout listed them superseded before). */
  const supersededPaid = new Set<string>();
  /** When each order was first settled (its first confirmation's handlers started, or committed), and by which payment. */
  const orderSettledAt = new Map<string, { paymentId: string; at: number }>();
  const runs = new Map<string, RunState>();
  const state = (id: string): RunState => {
    let s = runs.get(id);
    if (!s)
      runs.set(
        id,
        (s = {
          active: 0,
          successes: 0,
          failures: 0,
          failedSince: [],
          names: [],
          askedAfterSettle: false,
          mismatches: 0,
          settledBy: [],
          refunded: [],
        }),
      );
    return s;
  };
  const crashes: Array<{ instance: Instance; at: number }> = [];
  // The instance that generated each payment (its background write of a record dies with it).
  const generatedOn = new Map<string, number>();
  /** Which instance's write of each payment's queue entry (generatePayment's) the store took first, and when. */
  const recordedOn = new Map<string, { instance: Instance; at: number }>();
  /** Processes stalled (a GC pause, a paused VM) while they ran handlers: [from, to). */
  const stalls: Array<{ instance: Instance; from: number; to: number }> = [];
  /** Whether the `lapse` situation froze a process already (once a history). */
  let lapseDone = false;
  let lostCommitAnswers = 0;
  /** afterCommit callbacks run, per payment. */
  const afterCommits = new Map<string, number>();
  const crash = (victim: Instance, restartAfterMs: number) => {
    victim.crash();
    crashes.push({ instance: victim, at: time.now });
    time.after(restartAfterMs, () => start(victim.index));
  };
  const answers: Array<{ paymentId: string; outcome: string; settledBy?: string; handled: boolean; at: number }> = [];
  /** Whether the instance read the store's clock since that clock last stepped (its shared time is the store's again). */
  const measuredSinceStoreStep = (instance: Instance) => instance.storeClockReadAt >= world.storeClockSteppedAt;
  /**
   * Whether a return that began at `since` went past the payment's record (the recency is judged
   * before anything else): it asked for the payment's claim (found busy, another path holding it, it
   * waits for that path's record) or for its allowance of returns (found spent, settlement.evidence.ts),
   * and was then answered by the record whatever its date.
   */
  const wentPastTheRecord = (instance: Instance, paymentId: string, since: number) =>
    (instance.claimAskedAt.get(outcomeKey(paymentId)) ?? Number.NEGATIVE_INFINITY) >= since ||
    unpaidSlots(paymentId).some((slot) => (instance.rateLimitAskedAt.get(slot) ?? Number.NEGATIVE_INFINITY) >= since);
  /** How far the store's clock stepped back (`storeclock`), ms; 0: it did not. */
  let storeStepBackMs = 0;
  const trace: string[] = [];
  const note = (id: string, what: string) =>
    process.env.SIM_DEBUG === id && trace.push(`${((time.now - T0) / 1000).toFixed(1)}s ${what}`);
  const faultsSeen = { any: false };

  const dispatch = async (instance: Instance, name: PaymentEventName, event: PaymentEvent): Promise<void> => {
    const outcome = event as PaymentOutcomeEvent;
    leakCheck(`the ${name} event`, safeJson(event), violate);
    if (!('verification' in outcome)) return void violate(`${name} reached the outcomes' dispatcher`);
    const id = outcome.paymentId;
    const model = world.payments.get(id);
    const s = state(id);
    if (name === 'payment.mismatch') {
      // Exactly when the service's payment differs from what was sent: its amount or its order.
      // Or a superseded payment paid (its order's cart changed): SUCCESS, and yet never a confirmation.
      s.mismatches++;
      const superseded = supersededPaid.has(id) && model !== undefined && world.statusOf(model) === 'SUCCESS';
      if (
        !superseded &&
        (!model || !World.mismatched(model) || !['SUCCESS', 'FAILURE'].includes(world.statusOf(model)))
      )
        violate(`payment.mismatch of ${id}, whose service answer matches what was sent`);
      return;
    }
    if (name === 'payment.duplicate') {
      const settledBy = (event as PaymentDuplicateEvent).settledBy;
      if (settledBy.paymentId === id) violate(`${id} reported as a duplicate of itself`);
      s.settledBy.push({ paymentId: settledBy.paymentId, amount: String(settledBy.amount) });
    }
    if (name === 'payment.confirmed' || name === 'payment.duplicate') {
      // Safety: only what the service itself says is paid, for the amount and order it was made for.
      if (!model) violate(`confirmed ${id}, which the service never created`);
      else {
        // A hold of an order another payment paid is a duplicate too (its status PREAUTH_SUCCESS).
        const heldDuplicate = name === 'payment.duplicate' && world.statusOf(model) === 'PREAUTH_SUCCESS';
        if (world.statusOf(model) !== 'SUCCESS' && !heldDuplicate)
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
    if (name === 'payment.confirmed' && model && supersededPaid.has(id)) {
      // A superseded payment never settles its order while its checkout remembers it superseded
      // (the store keeps an order's checkout until its session's end plus 2 minutes; one it forgot
      // no longer says so, and the payment is then confirmed as any other).
      const checkout = await ledger.findCheckout(checkoutKey(undefined, model.trackingId) ?? '');
      if (checkout && checkout.paymentId !== id && (checkout.superseded ?? []).includes(id))
        violate(`confirmed ${id}, superseded by ${checkout.paymentId} (the cart changed) before it was paid`);
      else supersededPaid.delete(id);
    }
    if (name === 'payment.authorized') {
      // A hold of an order another payment had paid before the service ever answered the hold: a duplicate.
      const settled = model?.trackingId === undefined ? undefined : orderSettledAt.get(model.trackingId);
      const heldAt = world.ledger.firstFinalAt.get(id);
      if (!model?.preAuthorization || world.statusOf(model) !== 'PREAUTH_SUCCESS')
        violate(`payment.authorized of ${id}, which the service does not hold`);
      else if (settled !== undefined && heldAt !== undefined && heldAt > settled.at)
        violate(
          `payment.authorized of ${id}, held after ${settled.paymentId} had paid its order (a duplicate hold, capturable)`,
        );
    }
    // Paid: the order is settled (first one wins) before its handlers run; in a transaction, at its commit.
    if (name === 'payment.confirmed' && model?.trackingId !== undefined && !storeTx)
      if (!orderSettledAt.has(model.trackingId)) orderSettledAt.set(model.trackingId, { paymentId: id, at: time.now });
    // Exclusion holds while the store answers: a lease cannot be renewed while the store is away,
    // so an outage long enough for the running one's lease to lapse is the documented exception. So
    // is a run abandoned at its handlers' deadline: it goes on, the claim released (the engine logs it).
    if (s.active > 0 && !leaseCouldLapse(s.activeSince ?? time.now) && !abandonedLately(id))
      violate(`handlers of ${id} ran concurrently`);
    // In a transaction, the handlers' effects and the done marker commit together: nothing excuses a
    // run after the commit (docs/exactly-once.md).
    const inTransaction = transactional && TRANSACTIONAL_EVENTS.includes(name);
    // (A run that starts after the commit rolls back when its claim is lost: an attempt of a process
    // stalled meanwhile, or one that waited on the order's row; what commits is checked at the commit.)
    if (s.lastSuccess && !inTransaction && !excused(s.lastSuccess))
      violate(`handlers of ${id} ran again after they succeeded (${s.names.join(', ')}, then ${name})`);
    // One notion of time (docs/confirmations.md): once an instance read the store's clock, the times
    // it writes are the store's, whatever its own clock did since (a step, back or forward).
    const lateBy = outcome.occurredAt.getTime() - world.trueClock.now();
    // (A history that stalls processes is left out: a measurement whose round trip a freeze spoiled is
    // discarded by the engine, while the model saw the store answer; seeds 320 and 1270. Measured
    // means since the store's clock last stepped: until then the instance cannot know the step.)
    const measured = instance.measured && stalls.length === 0 && measuredSinceStoreStep(instance);
    if (measured && (lateBy > 5_000 || lateBy < -5_000 - (transactional ? HANDLERS_TIMEOUT_MS : 0)))
      violate(`${name} of ${id} dated ${lateBy / 1000}s off the store's clock on #${instance.index}`);
    const transaction = outcome.transaction;
    // Without its transaction the shop's handler refuses to run, as docs/exactly-once.md's recipes do
    // (an attempt abandoned at its deadline while it waited for its order's row dispatches so).
    if (inTransaction && !transaction) throw new Error('the payments store is not transactional');
    if (!inTransaction && transaction) violate(`${name} of ${id} ran in a transaction`);
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
    let frozen = false;
    try {
      // The shop's rows, written through the transaction: the order's status, then its history.
      if (inTransaction && transaction)
        await transaction.query('UPDATE orders SET status = $2 WHERE id = $1', [id, name, startedAt]);
      const duration =
        has('slow') && random.chance(0.3) ? random.between(1_000, SLOW_HANDLER_MS) : random.between(0, 200);
      if (editRace && model) editAsItEnds(model, duration);
      // A process stalled mid-handler for longer than the claim's lease: another attempt takes the claim.
      if (inTransaction && tx.stalls && txr.chance(0.15)) {
        instance.frozenUntil = time.now + txr.between(70_000, 180_000);
        stalls.push({ instance, from: time.now, to: instance.frozenUntil });
        // For the bounds, a crash (its claim lapses, then a redelivery or the sweep comes).
        crashes.push({ instance, at: time.now });
      }
      // `lapse`: the same freeze outside a transaction, the handler throwing once the process resumes.
      if (lapse && !inTransaction && !lapseDone && lapses.chance(0.3)) {
        lapseDone = frozen = true;
        instance.frozenUntil = time.now + lapses.between(70_000, 180_000);
        stalls.push({ instance, from: time.now, to: instance.frozenUntil });
        crashes.push({ instance, at: time.now });
      }
      await instance.io(
        () => undefined,
        () => duration,
      );
      if (inTransaction && transaction)
        await transaction.query('INSERT INTO order_events (order_id, kind) VALUES ($1, $2)', [id, name, startedAt]);
    } finally {
      close();
    }
    if (frozen || (has('failing') && random.chance(0.25))) {
      s.failures++;
      s.failedSince.push(startedAt);
      throw new Error('the shop database is busy (simulated)');
    }
    if (inTransaction) {
      outcome.afterCommit(async () => {
        const runs = afterCommits.get(id) ?? 0;
        afterCommits.set(id, runs + 1);
        if (runs > 0) violate(`the afterCommit callback of ${id} ran twice`);
        if (!world.db?.committed.has(id)) violate(`the afterCommit callback of ${id} ran before its commit`);
      });
      // Handled once its transaction commits (world.db.onCommit).
      return;
    }
    s.successes++;
    s.names.push(name);
    s.lastSuccess = { instance, at: time.now, since: startedAt };
    // The bound is on when the engine ran the handlers, not on how long the shop's own code takes.
    s.firstSuccessAt ??= startedAt;
  };

  // The engine's log of a run it abandoned at its deadline, within the longest such a run may go on.
  const abandonedLately = (id: string) =>
    world.ledger.logs.some((line) => {
      const at = T0 + Number.parseFloat(line) * 1000;
      return (
        line.includes(`error the handlers of ${id} did not finish within`) &&
        time.now - at <= HANDLERS_TIMEOUT_MS + SLOW_HANDLER_MS
      );
    });
  const leaseCouldLapse = (since: number, until = time.now) =>
    [...interrupted, ...stalls.map((t): [number, number] => [t.from, t.to])].some(
      ([from, to]) => Math.min(to, until) - Math.max(from, since - LEASE_MS) >= LEASE_MS / 3,
    );
  if (world.db) world.db.trace = (id, what) => note(id, what);
  // A transaction's commit: the shop's rows and the done marker, together (docs/exactly-once.md).
  if (world.db)
    world.db.onCommit = (paymentId, run) => {
      const s = state(paymentId);
      const committed = world.db?.committed.get(paymentId) ?? [];
      if (committed.length > 1)
        violate(`${paymentId}: the effects of its handlers committed ${committed.length} times (${run.name})`);
      if (run.rows !== 2)
        violate(`${paymentId}: a run of its ${run.name} handlers committed ${run.rows} of its 2 rows`);
      s.successes++;
      s.names.push(run.name);
      const order = world.payments.get(paymentId)?.trackingId;
      if (run.name === 'payment.confirmed' && order !== undefined && !orderSettledAt.has(order))
        orderSettledAt.set(order, { paymentId, at: run.committedAt });
      s.lastSuccess = { instance: instances[run.instance], at: run.committedAt };
      s.firstSuccessAt ??= run.startedAt;
    };

  // A second successful run is the at-least-once gap only when the first run's instance died, or
  // the store failed, before the done marker could be written.
  // A crash after the run, an outage not over when it ended, or one long enough while it ran for
  // its lease to lapse (the claim taken before its done marker): the documented re-runs.
  const excused = (last: { instance: Instance; at: number; since?: number }) =>
    crashes.some((c) => c.instance === last.instance && c.at >= last.at) ||
    interrupted.some(([, to]) => to >= last.at) ||
    (last.since !== undefined && leaseCouldLapse(last.since, last.at));

  // The operations' events: a duplicate's refund, naming the payment that paid its order.
  const operations = async (_instance: Instance, name: PaymentEventName, event: PaymentEvent): Promise<void> => {
    leakCheck(`the ${name} event`, safeJson(event), violate);
    if (name !== 'payment.refunded') return void violate(`${name}: an operation nobody made`);
    const refunded = event as PaymentRefundedEvent;
    state(refunded.paymentId).refunded.push(refunded.duplicateOf);
  };

  const skews: number[] = [];
  const instances: Instance[] = [];
  const everStarted: Instance[] = [];
  const start = (index: number) => {
    skews[index] ??= has('skew') ? random.between(-3_600_000, 3_600_000) : 0;
    // Mid-rotation: half the instances sign with the old secret and accept the new, half the reverse.
    const [secret, previous] =
      extra('rotation') && index % 2 === 1
        ? [WEBHOOK_SECRET_NEXT, WEBHOOK_SECRET]
        : [WEBHOOK_SECRET, WEBHOOK_SECRET_NEXT];
    const instance = new Instance(index, world, skews[index], {
      sessionSecs,
      dispatch,
      jitter: new Random(seed * 64 + everStarted.length),
      secret,
      ...(extra('rotation') ? { previousSecrets: [previous] } : {}),
      refundDuplicates: extra('refunds'),
      operations,
    });
    if (slowClock) instance.slowClockAnswers = { draws: clk, chance: 0.3, minMs: 12_000, maxMs: 30_000 };
    instances[index] = instance;
    everStarted.push(instance);
  };
  const count = random.int(2, 3);
  for (let i = 0; i < count; i++) start(i);
  const live = () => instances.filter((i) => i.alive);
  const anyLive = (draws = random) => (live().length > 0 ? draws.pick(live()) : undefined);
  // Another merchant account of the app, with its own store: its route must refuse this one's tokens
  // (421), even though both share the webhook secret; its handlers must never run for them.
  const otherAccount = extra('accounts')
    ? new Instance(9, new World(time, more, { verify503: 0, verify429: 0, verifyHang: 0, storeDown: [] }), 0, {
        sessionSecs,
        dispatch: async (_i, name, event) =>
          void violate(`${name} of ${(event as PaymentOutcomeEvent).paymentId} ran under the other account`),
        jitter: new Random(seed * 64 + 63),
        name: 'second-account',
        previousSecrets: [WEBHOOK_SECRET_NEXT],
      })
    : undefined;

  const callerErrors = (where: string) => (error: unknown) => {
    if (!(error instanceof PaymentsError)) violate(`${where} threw ${String(error)}`);
    else leakCheck(`${where} error`, `${error.message} ${safeJson(error)}`, violate);
  };

  // A path that reached the plugin while the store was down could not be remembered by it: the
  // bound then is the sweep's (or the next path's).
  const asked = (id: string, instance: Instance, via: 'webhook' | 'return') => {
    if (world.storeUnreachableFrom(instance.index)) return;
    const s = state(id);
    s.askedAfterSettle = true;
    s.firstAskAt ??= time.now;
    if (via === 'webhook') s.webhookAskAt ??= time.now;
  };

  // The webhook the service sends, retried on anything but 2xx (backoff 5 s, doubling, 6 tries).
  const deliver = (payment: ModelPayment, attempt: number) => {
    const instance = anyLive();
    const retry = () => attempt < 6 && time.after(5_000 * 2 ** attempt, () => deliver(payment, attempt + 1));
    if (!instance || !payment.webhookUrl || (has('lossy') && random.chance(0.4))) return void retry();
    if (attempt === 0 && has('lossy') && random.chance(0.5)) return; // this webhook is never sent
    if (payment.settleAt !== undefined && time.now >= payment.settleAt) asked(payment.id, instance, 'webhook');
    const url = new URL(payment.webhookUrl);
    const request = { query: {}, body: { payment_id: payment.id }, pathToken: url.pathname.split('/').pop() };
    if (otherAccount && more.chance(0.2))
      otherAccount.client.webhooks.handle(request).then(
        (answer) =>
          answer.status !== 421 &&
          violate(`another account's route answered ${answer.status} to a token of this one (${payment.id})`),
        (error: unknown) => violate(`webhook threw ${String(error)}`),
      );
    let answered = false;
    const timeout = time.after(30_000, () => !answered && ((answered = true), retry()));
    // An early delivery (sent as the service created the payment) finds no record to bind its token.
    const beforeRecord = earlyAt.get(payment.id) === time.now;
    note(payment.id, `webhook attempt ${attempt} to #${instance.index}`);
    instance.client.webhooks.handle(request).then(
      (answer) => {
        note(payment.id, `webhook answered ${answer.status}`);
        leakCheck('a webhook answer', safeJson(answer), violate);
        // Every delivery here is genuine: signed by this account, under a secret every instance accepts.
        // (A token the store forgot, or does not hold yet, of a payment whose verify names another
        // order, looks like a replay of another payment's token: refused, and left to the return and
        // the sweep. generatePayment's record, made while the store was away, lands in the background
        // within a retry's wait of the store's return; an early delivery comes before it was made.)
        const unrecorded = interrupted.some(
          ([from, to]) =>
            from <= payment.createdAt &&
            payment.createdAt <= to &&
            // Its write lands within a retry's wait of the store's return, unless the instance
            // that retries it crashed first: then the store never holds it.
            (time.now <= to + RECORD_RETRY_SLACK_MS ||
              crashes.some(
                (c) =>
                  c.instance.index === generatedOn.get(payment.id) &&
                  payment.createdAt <= c.at &&
                  c.at <= to + RECORD_RETRY_SLACK_MS,
              )),
        );
        const replayLike = (extra('evictions') || unrecorded || beforeRecord) && World.mismatched(payment);
        if ((answer.status === 401 && !replayLike) || answer.status === 421)
          violate(`the webhook of ${payment.id} was refused (${answer.status}) on #${instance.index}`);
        if (answered) return;
        answered = true;
        timeout.cancelled = true;
        if (answer.status < 200 || answer.status >= 300) retry();
      },
      (error: unknown) => violate(`webhook threw ${String(error)}`),
    );
  };

  // The customer back on the return page: reloads while it says "processing". (`draws`: a situation's
  // own stream, so that its customers leave the history's other draws as they were.)
  const returnTo = (payment: ModelPayment, reloads: number, draws = random) => {
    const instance = anyLive(draws);
    if (!instance) return;
    if (payment.settleAt !== undefined && time.now >= payment.settleAt) asked(payment.id, instance, 'return');
    note(payment.id, `return starts on #${instance.index}`);
    const verifiesBefore = world.ledger.verifies.get(payment.id) ?? 0;
    const startedAt = time.now;
    instance.client
      .reconcilePayment(payment.id, { expected: { amount: payment.amount, developerTrackingId: payment.trackingId } })
      .then(
        (result) => {
          note(payment.id, `return on #${instance.index}: ${result.outcome}`);
          leakCheck('a return answer', safeJson(result), violate);
          answers.push({
            paymentId: payment.id,
            outcome: result.outcome,
            settledBy: result.settledBy,
            handled: result.handled,
            at: time.now,
          });
          // A pending record dated in the future is not recent: it cannot answer the return page alone
          // (docs/confirmations.md, "One notion of time"). The future is the store's clock's, as the
          // instance knows it once it measured that clock since it last stepped.
          if (
            !real &&
            result.outcome === 'pending' &&
            measuredSinceStoreStep(instance) &&
            !has('faults') &&
            !extra('refunds') &&
            !world.storeUnreachableFrom(instance.index) &&
            (world.ledger.verifies.get(payment.id) ?? 0) === verifiesBefore &&
            (instance.verifiedAt.get(payment.id) ?? Number.NEGATIVE_INFINITY) < startedAt - VERIFY_INTERVAL_MS &&
            !wentPastTheRecord(instance, payment.id, startedAt)
          )
            void world.store.getOutcome(payment.id).then((record) => {
              const ahead = record === undefined ? 0 : Date.parse(record.updatedAt) - world.trueClock.now();
              if (record?.outcome === 'pending' && ahead > 3_000)
                violate(`the return page of ${payment.id} was told pending by a record dated ${ahead / 1000}s ahead`);
            });
          if (result.outcome === 'pending' && reloads > 0 && draws.chance(0.8))
            time.after(draws.between(5_000, 20_000), () => returnTo(payment, reloads - 1, draws));
        },
        (error: unknown) => {
          note(payment.id, `return failed: ${String(error)}`);
          callerErrors('reconcilePayment')(error);
        },
      );
  };

  // An abandoned checkout's customer back on the return page, 2 to 5 times in its session, on any
  // instance; what it costs while the session is open is counted at its end.
  const unpaidVerifies = new Map<string, number>();
  const comeBackUnpaid = (payment: ModelPayment) => {
    const room = payment.sessionEndsAt - time.now - 10_000;
    if (room < 10_000) return;
    for (let k = unp.int(2, 5); k > 0; k--)
      time.after(unp.between(1_000, room), () => {
        const up = live();
        const instance = up.length > 0 ? unp.pick(up) : undefined;
        if (!instance) return;
        note(payment.id, `unpaid return on #${instance.index}`);
        instance.client
          .reconcilePayment(payment.id, {
            expected: { amount: payment.amount, developerTrackingId: payment.trackingId },
          })
          .then((result) => {
            if (result.outcome !== 'pending' && time.now < payment.sessionEndsAt)
              violate(`the return page of unpaid ${payment.id} was told ${result.outcome}`);
          }, callerErrors('reconcilePayment (unpaid)'));
      });
    time.at(payment.sessionEndsAt, () => unpaidVerifies.set(payment.id, world.ledger.verifies.get(payment.id) ?? 0));
  };

  // The orders: each generated on some instance, then paid (or not) by its customer; with `twice`,
  // some customers open a second payment for the same order (another tab) and may pay both. With
  // `reorder`, some orders are generated again before they are paid: at the same amount (the open
  // payment's link again) or at another (a new payment; only the last one is paid).
  // With `superseded`, some orders change their cart once before they are paid, and the customer
  // pays the superseded payment too (another tab).
  const reuses: Array<{ first: string; again: string; at: number }> = [];
  /** Payments whose generatePayment answered (the instance did not die before its record). */
  const answered = new Set<string>();
  /** Payments opened with an `idempotencyKey` (another tab): their own checkout, which the order's never lists. */
  const ownCheckout = new Set<string>();
  const checkout = (
    k: number,
    amount: string,
    idempotencyKey?: string,
    reorders = 0,
    previous?: string,
    changeCart = false,
  ) => {
    const instance = anyLive();
    if (!instance) return;
    const asked = time.now;
    instance.client
      .generatePayment({ amount, developerTrackingId: `order-${k}` }, idempotencyKey ? { idempotencyKey } : undefined)
      .then((generated) => {
        leakCheck('a generate answer', safeJson(generated), violate);
        answered.add(generated.paymentId);
        if (idempotencyKey !== undefined) ownCheckout.add(generated.paymentId);
        const payment = world.payments.get(generated.paymentId);
        if (!payment)
          return violate(`generatePayment answered ${generated.paymentId}, which the service never created`);
        if (payment.amount !== amount)
          violate(`generatePayment of order-${k} at ${amount} answered ${payment.id}, made for ${payment.amount}`);
        if (previous !== undefined) {
          const before = world.payments.get(previous);
          if (before && before.amount === amount) reuses.push({ first: previous, again: payment.id, at: asked });
          else if (payment.id === previous) violate(`order-${k} at a new amount ${amount} reused ${previous}`);
          else if (before && situation('superseded') && idempotencyKey === undefined)
            void paySuperseded(before, payment);
        }
        if (payment.settleAt !== undefined) return; // the open payment's link again: paid once
        if (changeCart) {
          const again = String(Number(amount) + 500 * sit.int(1, 4));
          time.after(sit.between(1_000, 20_000), () => checkout(k, again, idempotencyKey, 0, payment.id));
          return;
        }
        if (reorders > 0) {
          const again = more.chance(0.5) ? amount : String(Number(amount) + 500 * more.int(1, 4));
          time.after(more.between(1_000, 20_000), () => checkout(k, again, idempotencyKey, reorders - 1, payment.id));
          return;
        }
        if (!random.chance(0.85)) {
          // The customer walks away: EXPIRED at the session's end; with `unpaid`, back on the return
          // page a few times anyway.
          if (unpaidReturns) comeBackUnpaid(payment);
          return;
        }
        payment.settleAt = time.now + random.between(3_000, sessionSecs * 600);
        payment.outcome = random.chance(0.85) ? 'SUCCESS' : 'FAILURE';
        if (random.chance(0.05)) {
          // Some service-side mismatches are in another currency (chosen without a draw of their own,
          // so that a seed replays the rest of its history as before).
          if (Number(amount) % 1_000 === 0) payment.reportedCurrency = '840';
          else payment.reportedAmount = String(Number(amount) + 1_000);
        }
        // The service's verify names another order (another of this shop's, or one it never had).
        if (extra('mismatches') && more.chance(0.15))
          payment.reportedTrackingId = more.chance(0.5) ? `order-${(k + 1) % orders}` : `order-${k}-other`;
        // Two tabs of one order paid at once (transactional histories): both confirmations race for
        // the order inside their transactions.
        const firstTab = paid.get(k);
        if (
          transactional &&
          idempotencyKey?.startsWith('tab-2') &&
          firstTab?.settleAt !== undefined &&
          firstTab.settleAt > time.now &&
          txr.chance(0.7)
        ) {
          payment.settleAt = firstTab.settleAt + txr.between(0, 1_000);
          payment.outcome = 'SUCCESS';
        }
        paid.set(k, payment);
        note(payment.id, `generated on #${instance.index}`);
        generatedOn.set(payment.id, instance.index);
        payment.lagMs = has('lag') ? random.between(0, 8_000) : random.chance(0.3) ? random.between(0, 2_000) : 0;
        if (has('longlag')) longLag(own, payment);
        if (has('slowstore') && own.chance(0.5)) {
          // The customer pays at once, before the slow store took generatePayment's write, and
          // verify lags the webhook: the webhook's pending-lane entry must survive that write.
          payment.settleAt = time.now + own.between(500, 4_000);
          payment.lagMs = own.between(2_000, 8_000);
        }
        if (storeClock && storeStepBackMs === 0 && payment.lagMs > STORE_STEP_MIN_LAG_MS)
          stepStoreClockWhileLagging(payment);
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
  // The customer pays the payment a changed cart superseded too (the first tab, still open), once the
  // order's checkout, which every instance reads, lists it superseded.
  const paySuperseded = async (old: ModelPayment, current: ModelPayment) => {
    const checkout = await ledger.findCheckout(checkoutKey(undefined, old.trackingId) ?? '').catch(() => undefined);
    const room = old.sessionEndsAt - time.now - 5_000;
    if (!checkout || checkout.paymentId !== current.id || !(checkout.superseded ?? []).includes(old.id)) return;
    if (old.settleAt !== undefined || room < 2_000 || !sit.chance(0.7)) return;
    old.settleAt = time.now + sit.between(1_000, Math.min(90_000, room));
    old.outcome = 'SUCCESS';
    old.lagMs = sit.chance(0.3) ? sit.between(0, 2_000) : 0;
    supersededPaid.add(old.id);
    note(old.id, `superseded by ${current.id}, paid at ${((old.settleAt - T0) / 1000).toFixed(1)}s`);
    time.at(old.settleAt + sit.between(0, 1_500), () => deliver(old, 0));
    if (sit.chance(0.6)) time.at(old.settleAt + sit.between(500, 6_000), () => returnTo(old, 4));
  };

  // A pre-authorization of an order (its own checkout: another tab, or the shop's "hold" flow), held
  // mostly after the order's payment, sometimes before; the customer comes back through the webhook only.
  const hold = (k: number, amount: string) => {
    const instance = anyLive();
    if (!instance) return;
    instance.client
      .generatePayment(
        { amount, developerTrackingId: `order-${k}`, preAuthorization: true },
        { idempotencyKey: `hold-${k}` },
      )
      .then((generated) => {
        leakCheck('a generate answer', safeJson(generated), violate);
        answered.add(generated.paymentId);
        const payment = world.payments.get(generated.paymentId);
        if (!payment)
          return violate(`generatePayment answered ${generated.paymentId}, which the service never created`);
        if (!payment.preAuthorization) violate(`the pre-authorization of order-${k} was created without its flag`);
        if (payment.settleAt !== undefined) return;
        const session = payment.sessionEndsAt - time.now;
        payment.settleAt =
          time.now + (sit.chance(0.7) ? sit.between(0.5 * session, 0.9 * session) : sit.between(3_000, 0.3 * session));
        payment.outcome = 'PREAUTH_SUCCESS';
        payment.lagMs = sit.chance(0.3) ? sit.between(0, 2_000) : 0;
        note(payment.id, `a hold of order-${k}, held at ${((payment.settleAt - T0) / 1000).toFixed(1)}s`);
        time.at(payment.settleAt + sit.between(0, 1_500), () => deliver(payment, 0));
      }, callerErrors('generatePayment (pre-authorization)'));
  };

  // `storeclock`: the store's clock steps back by minutes while this paid payment's verify lags (its
  // webhook or its customer's return has found it pending by then, and its pending lane rewrote the
  // record since, dated by the store's clock before the step); its customer reloads the return page
  // once every instance must have measured the store's clock again (a measurement is at most a minute
  // old when a path reads the shared time), while the verify still lags.
  const stepStoreClockWhileLagging = (payment: ModelPayment) => {
    storeStepBackMs = stepDraws.between(120_000, 600_000);
    const at = (payment.settleAt ?? time.now) + stepDraws.between(10_000, 30_000);
    time.at(at, () => {
      note(payment.id, `the store's clock steps back ${storeStepBackMs / 1000}s`);
      world.stepStoreClock(-storeStepBackMs);
    });
    time.at(at + stepDraws.between(61_000, 90_000), () => returnTo(payment, 2, stepDraws));
  };

  const orders = random.int(3, 6);
  const paid = new Map<number, ModelPayment>();
  for (let k = 0; k < orders; k++) {
    time.after(random.between(0, 60_000), () => {
      const amount = String(random.int(1, 500) * 500);
      const reorders = extra('reorder') && more.chance(0.5) ? more.int(1, 2) : 0;
      const changeCart = reorders === 0 && situation('superseded') && sit.chance(0.5);
      checkout(k, amount, undefined, reorders, undefined, changeCart);
      if (situation('holds') && sit.chance(0.5)) time.after(sit.between(0, 5_000), () => hold(k, amount));
      // The second tab is a checkout of its own (its key), at the same amount or, for some, another.
      const second = more.chance(0.3) ? String(Number(amount) + 500) : amount;
      if (has('twice') && random.chance(0.5))
        time.after(random.between(0, 5_000), () => checkout(k, second, `tab-2-${k}`));
    });
  }

  // The order's current payment (its checkout's) is never refunded automatically when the order was
  // settled by a payment of another cart: a superseded one, or one of another amount (another tab).
  world.onRefund = (payment) => {
    const order = payment.trackingId;
    if (order === undefined) return;
    void Promise.all([
      ledger.findCheckout(checkoutKey(undefined, order) ?? ''),
      ledger.findOrderSettlement(orderLedgerKey(undefined, order)),
    ]).then(
      ([checkout, settled]) => {
        // A payment the order's checkout does not know (one opened with its own key, which the
        // order's checkout never lists) is refunded automatically only when its amount is the
        // settling payment's (a double charge): any other may be a changed cart's payment
        // (docs/confirmations.md, "Two tabs, the cart changed").
        if (
          settled &&
          settled.paymentId !== payment.id &&
          ownCheckout.has(payment.id) &&
          Number(settled.amount) !== Number(payment.reportedAmount)
        )
          violate(
            `${payment.id} (${payment.reportedAmount}), which the checkout of ${order} does not know, refunded: ${settled.paymentId} (${settled.amount}) paid the order`,
          );
        if (!checkout || !settled || checkout.paymentId !== payment.id || settled.paymentId === payment.id) return;
        const otherCart =
          (checkout.superseded ?? []).includes(settled.paymentId) || Number(settled.amount) !== Number(checkout.amount);
        if (otherCart)
          violate(
            `${payment.id}, the current payment of ${order} (${checkout.amount}), refunded: ${settled.paymentId} of another cart (${settled.amount}) paid the order`,
          );
      },
      () => undefined,
    );
  };

  // The service may deliver a webhook as soon as it created the payment, before the plugin has
  // recorded it (its generate answer still on the way): it must be answered, never handled.
  if (extra('early'))
    world.onCreated = (payment) => {
      if (more.chance(0.5))
        time.after(more.between(0, 400), () => {
          earlyAt.set(payment.id, time.now);
          deliver(payment, 4);
        });
    };

  // A customer edits the return URL's payment_id to another of the shop's payments, keeping their own
  // order's expectation: refused (the record contradicts it), or at most a mismatch that records and
  // runs nothing; never that payment's outcome.
  const edits = new Map<string, number>();
  const earlyAt = new Map<string, number>();
  // The return page cannot be fooled after the fact (docs/confirmations.md): `own`'s expectation on
  // `target`'s return is refused, or at most a mismatch that records and runs nothing; never that
  // payment's outcome, also when another path handles it while the return runs (`asItEnds`).
  const editedReturn = (target: ModelPayment, own: ModelPayment, instance: Instance, asItEnds: boolean) => {
    edits.set(target.id, (edits.get(target.id) ?? 0) + 1);
    instance.client
      .reconcilePayment(target.id, { expected: { amount: own.amount, developerTrackingId: own.trackingId } })
      .then(
        (result) => {
          leakCheck('a return answer', safeJson(result), violate);
          if (result.outcome !== 'mismatch' && result.outcome !== 'pending')
            violate(
              `an edited return (${target.id} for ${String(own.trackingId)}) answered ${result.outcome}${asItEnds ? `, ${target.id} handled as it ran (its record not checked against the return's expectation)` : ''}`,
            );
        },
        (error: unknown) => {
          if (!(error instanceof PaymentsValidationError) && !world.storeUnreachableFrom(instance.index))
            callerErrors('reconcilePayment (edited)')(error);
          else leakCheck('reconcilePayment (edited) error', String(error), violate);
        },
      );
  };
  if (extra('edits'))
    for (let k = more.int(2, 6); k > 0; k--)
      time.at(T0 + more.between(10_000, sessionSecs * 1000 + 120_000), () => {
        const mine = [...paid.values()];
        if (mine.length < 2) return;
        const own = more.pick(mine);
        const target = more.pick(mine.filter((p) => p.trackingId !== own.trackingId));
        const instance = anyLive();
        if (!target || !instance) return;
        editedReturn(target, own, instance, false);
      });
  // `editrace`: an edited return to a payment whose handlers end in `endsInMs`, started a few ms
  // before: its first read (the record) comes before the store writes the outcome, its second (the
  // queue entry) after, so that nothing it read contradicts its expectation, and its claim finds
  // the payment done.
  // Their customers reach a front instance of the app (the return page only: no handlers registered,
  // so no reconciliation of its own), its I/O drawn from a stream of its own: the history's other
  // draws stay as they were.
  const front = editRace
    ? new Instance(7, world, 0, {
        sessionSecs,
        dispatch: async (_i, name) => void violate(`${name} ran on the front instance, which registered no handlers`),
        jitter: new Random(seed * 64 + 62),
        latencies: new Random(seed * 49_979_687 + 307),
        handlers: false,
      })
    : undefined;
  // `unsynced`: a reconciliation worker (no traffic of its own: its passes are its first reads of the
  // store's clock), its clock 5 to 60 min ahead, started while the store is out of its reach; its path
  // to the store comes back 1 ms after its first timed pass failed to read the store's clock, before
  // that pass would take the queue. Its draws and I/O from streams of their own.
  if (unsynced) {
    const from = T0 + uns.between(0, sessionSecs * 1000);
    const skew = uns.between(300_000, 3_600_000);
    time.at(from, () => {
      const cut = { index: 8, from, to: Number.POSITIVE_INFINITY };
      partitions.push(cut);
      const worker = new Instance(8, world, skew, {
        sessionSecs,
        dispatch,
        jitter: new Random(seed * 64 + 61),
        latencies: new Random(seed * 49_979_687 + 607),
        operations,
      });
      worker.onClockUnreachable = () => {
        if (time.now >= from + INTERVAL_MS - 1_000 && cut.to === Number.POSITIVE_INFINITY) cut.to = time.now + 1;
      };
    });
  }
  // One notion of time (docs/confirmations.md): a pass takes what is due by the store's clock (a
  // wake's lead of a second ahead, and its offset's error), and an instance whose clock never
  // reached the store's takes nothing, whatever its own clock says. (An instance that measured the
  // store's clock before it stepped back is ahead by the step until it measures it again; in a
  // history that stalls processes a measurement's round trip may span a freeze, which allows the
  // offset of before the step: as for the events' dates above.)
  const takeCheck = (instance: Instance, until: number) => {
    const ahead = until - world.trueClock.now();
    if (ahead > 5_000 && !(instance.measured && (stalls.length > 0 || !measuredSinceStoreStep(instance))))
      violate(
        `a reconciliation pass on #${instance.index} took the queue ${ahead / 1000}s ahead of the store's clock${instance.measured ? '' : " (its clock never reached the store's)"}: One notion of time`,
      );
  };
  world.onStoreCall = (instance, name, args) => {
    if (name === 'takeDuePending') takeCheck(instance, Number(args[0]));
    const entry = args[0] as { paymentId?: string } | undefined;
    if (name === 'queueGenerated' && entry?.paymentId !== undefined && !recordedOn.has(entry.paymentId))
      recordedOn.set(entry.paymentId, { instance, at: time.now });
  };
  const editAsItEnds = (target: ModelPayment, endsInMs: number) => {
    const others = [...paid.values()].filter((p) => p.trackingId !== target.trackingId);
    if (!front || others.length === 0 || !raceDraws.chance(0.5)) return;
    const own = raceDraws.pick(others);
    time.after(Math.max(0, endsInMs - raceDraws.between(0.5, 15)), () => editedReturn(target, own, front, true));
  };

  // Strangers typing ids into the return page: a small pool that comes back, and fresh ones.
  const strangerIds = Array.from({ length: 8 }, (_, i) => `pay_x${seed % 1000}_${i}`);
  const strangersSeen = new Set<string>();
  const horizon = T0 + 60_000 + sessionSecs * 1000 + GRACE_MS + INTERVAL_MS + 600_000;
  let strangerBursts = 0;
  if (has('strangers')) {
    // Bursts of invented ids on the return page, at random times.
    for (let burst = random.int(1, 3); burst > 0; burst--) {
      strangerBursts++;
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
        crash(victim, random.between(1_000, 30_000));
      });
    }
  }

  if (has('steps')) {
    stepClocks(own, time, T0 + sessionSecs * 1000, () => live());
    // More steps, from a stream of their own: anywhere in the sessions, and during every store
    // outage and partition (the offset cannot be measured again until the store answers).
    const steps = new Random(seed * 15_485_863 + 3);
    const windows: Array<[number, number, number | undefined]> = [
      ...storeDown.map(([from, to]): [number, number, number | undefined] => [from, to, undefined]),
      ...partitions.map((p): [number, number, number | undefined] => [p.from, p.to, p.index]),
    ];
    for (let k = steps.int(2, 4); k > 0; k--) windows.push([T0, T0 + sessionSecs * 1000, undefined]);
    for (const [from, to, index] of windows) {
      const stepMs = (steps.chance(0.5) ? -1 : 1) * steps.between(5_000, 1_800_000);
      const which = steps.next();
      time.at(steps.between(from, to), () => {
        const candidates = index === undefined ? live() : live().filter((i) => i.index === index);
        if (candidates.length > 0) candidates[Math.floor(which * candidates.length)].clock.stepMs += stepMs;
      });
    }
  }

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

  // One payment per checkout: the same order at the same amount, while its payment is open, answers
  // that payment (unless the store could not say so: it was down, or an instance died holding the
  // order's lock; or a clock far ahead saw the session near its end; or a slow store had not
  // taken the first payment's checkout yet).
  if (!has('skew') && !has('slowstore') && crashes.length === 0 && interrupted.length === 0)
    for (const r of reuses)
      if (r.again !== r.first)
        violate(`the order of ${r.first}, generated again at its amount while open, opened ${r.again}`);

  // What each return page was told, against what the service knows.
  for (const a of answers) {
    const model = world.payments.get(a.paymentId);
    if (!model || a.outcome === 'pending') continue;
    const final = world.statusOf(model);
    // A superseded payment paid while nobody settled its order: a mismatch for a person.
    if (a.outcome === 'mismatch' && supersededPaid.has(model.id) && final === 'SUCCESS') continue;
    const order = confirmedOf.get(model.trackingId ?? '');
    const expected =
      World.mismatched(model) && (final === 'SUCCESS' || final === 'FAILURE')
        ? 'mismatch'
        : final === 'SUCCESS'
          ? order !== undefined && order !== model.id
            ? 'duplicate'
            : 'confirmed'
          : final === 'FAILURE'
            ? 'failed'
            : final === 'EXPIRED'
              ? 'expired'
              : 'pending';
    const settler = a.settledBy === undefined ? undefined : world.payments.get(a.settledBy);
    const unsettledDuplicate =
      expected === 'confirmed' &&
      a.outcome === 'duplicate' &&
      order === undefined &&
      settler?.trackingId === model.trackingId;
    // In a transaction, the order's settlement rolls back with a failed handler: a payment told
    // "confirmed" while its handlers failed (handled: false) may lose its order to another later.
    const rolledBackOrder = transactional && a.outcome === 'confirmed' && !a.handled && expected === 'duplicate';
    if (a.outcome !== expected && !unsettledDuplicate && !rolledBackOrder)
      violate(`the return page of ${a.paymentId} was told ${a.outcome}; the service answers ${final} (${expected})`);
    if (a.outcome === 'duplicate' && (a.settledBy === a.paymentId || (order !== undefined && a.settledBy !== order)))
      violate(
        `the return page of ${a.paymentId} was told it duplicates ${String(a.settledBy)}; ${String(order)} paid the order`,
      );
  }

  // Liveness, budget and the record, payment by payment.
  const latencies: number[] = [];
  let settled = 0;
  let settledVerifies = 0;
  for (const payment of world.payments.values()) {
    const s = state(payment.id);
    const final = world.statusOf(payment);
    const record = await world.store.getOutcome(payment.id);
    // A superseded payment paid is a mismatch too when nobody had settled its order (else a duplicate).
    const mismatch =
      (World.mismatched(payment) && (final === 'SUCCESS' || final === 'FAILURE')) ||
      (supersededPaid.has(payment.id) && final === 'SUCCESS' && record?.outcome === 'mismatch');
    if (record) leakCheck('an outcome record', safeJson(record), violate);
    if (mismatch) {
      if (s.names.includes('payment.confirmed')) violate(`${payment.id}: a mismatch was confirmed`);
      if (record && record.outcome !== 'mismatch' && record.outcome !== 'pending')
        violate(`${payment.id}: recorded ${record.outcome}, and the service answers another amount or order`);
      // The record is written before the event: only a crash in between leaves it without one.
      if (record?.outcome === 'mismatch' && s.mismatches === 0 && crashes.length === 0)
        violate(`${payment.id}: recorded as a mismatch, but payment.mismatch was never emitted`);
      continue;
    }
    const queued = await world.store.findPending(payment.id);
    const known = record !== undefined || queued !== undefined || s.successes > 0;
    if (!known) continue; // generate failed after the service created it: the customer never got a link
    const finalAt = world.finalAt(payment);
    // One order, one charge: of an order's successful payments one is confirmed, the others duplicates.
    const settledBy = confirmedOf.get(payment.trackingId ?? '');
    const paidTwice = final === 'SUCCESS' && settledBy !== undefined && settledBy !== payment.id;
    // A hold: a duplicate once the order was paid before the service first answered it; before, either
    // (the order may be paid between that answer and the plugin's read of the order).
    const settledAt = orderSettledAt.get(payment.trackingId ?? '');
    const heldLate = settledAt !== undefined && (world.ledger.firstFinalAt.get(payment.id) ?? 0) > settledAt.at;
    const heldTwice =
      final === 'PREAUTH_SUCCESS' && settledBy !== undefined && (heldLate || s.names[0] === 'payment.duplicate');
    const expectedName: PaymentEventName =
      paidTwice || heldTwice
        ? 'payment.duplicate'
        : final === 'PREAUTH_SUCCESS'
          ? 'payment.authorized'
          : final === 'SUCCESS'
            ? 'payment.confirmed'
            : final === 'FAILURE'
              ? 'payment.failed'
              : 'payment.expired';
    if (s.names.length > 0 && s.names[0] !== expectedName)
      violate(`${payment.id}: ran ${s.names[0]} for a payment the service answers ${final}`);
    // A duplicate names the payment that paid its order, and that payment's amount.
    for (const by of s.settledBy) {
      const settler = world.payments.get(by.paymentId);
      if (settler?.preAuthorization)
        violate(`payment.duplicate of ${payment.id} names the hold ${by.paymentId}: a hold settled the order`);
      if (
        !settler ||
        (settledBy !== undefined && by.paymentId !== settledBy) ||
        settler.trackingId !== payment.trackingId
      )
        violate(`payment.duplicate of ${payment.id} names ${by.paymentId}; ${String(settledBy)} paid the order`);
      else if (Number(by.amount) !== Number(settler.amount))
        violate(`payment.duplicate of ${payment.id} names ${by.paymentId} for ${by.amount}, paid ${settler.amount}`);
    }
    // The record says what was handled: the outcome, the payment that settled a duplicate's order.
    if (record && record.outcome !== 'pending') {
      const wanted = expectedName.slice('payment.'.length);
      // A hold whose handlers ran again (its done marker was lost) after another payment paid its
      // order is a duplicate by then: either record is right for it.
      const heldThenPaid = final === 'PREAUTH_SUCCESS' && settledBy !== undefined;
      // A confirmation whose handlers failed (rolled back with their transaction) left the order
      // unpaid: another payment may pay it since, and this one is a duplicate when it runs again.
      const failedThenPaidByAnother =
        record.outcome === 'confirmed' && record.handlers === 'failed' && wanted === 'duplicate';
      if (
        record.outcome !== wanted &&
        !failedThenPaidByAnother &&
        !(record.outcome === 'duplicate' && (settledBy === undefined || heldThenPaid))
      )
        violate(`${payment.id}: recorded ${record.outcome}, the service answers ${final} (${wanted})`);
      if (
        record.outcome === 'duplicate' &&
        (record.settledBy === payment.id || (settledBy !== undefined && record.settledBy !== settledBy))
      )
        violate(
          `${payment.id}: recorded as settled by ${String(record.settledBy)}; ${String(settledBy)} paid the order`,
        );
      if (record.amount !== payment.amount || record.developerTrackingId !== payment.trackingId)
        violate(`${payment.id}: recorded ${record.amount} for ${String(record.developerTrackingId)}`);
      if (record.handlers === 'succeeded' && s.successes === 0)
        violate(`${payment.id}: recorded its handlers succeeded; they never did`);
      // Delivery is effectively-once (docs/confirmations.md): an attempt frozen past its lease whose
      // handlers then fail only gives the claim back. A failure recorded after the handlers succeeded
      // is a later run's, which began once they had; one that began before was the lapsed attempt's.
      // (In a transaction, success is the commit, which a run may reach and not know: its answer
      // lost, a crash at it; the transactional checks are at the commit, above.)
      const succeeded = s.lastSuccess?.at;
      if (
        !transactional &&
        record.handlers === 'failed' &&
        succeeded !== undefined &&
        !s.failedSince.some((at) => at >= succeeded)
      )
        violate(
          `${payment.id}: recorded its handlers failed after they succeeded, by a run that began before (its claim had lapsed; Delivery is effectively-once)`,
        );
    }
    // Refunds of duplicates: one call per duplicate, never sent again (the modelled service refunds
    // as often as asked), each told once; a refund whose answer was lost is recorded unknown.
    const gap = crashes.length > 0 || interrupted.length > 0;
    if (payment.refundCalls > 1 && !gap) violate(`${payment.id}: its refund was asked ${payment.refundCalls} times`);
    if (payment.refunds > 0 && !paidTwice) violate(`${payment.id} was refunded, and it is no duplicate`);
    if (payment.refunds > 0 && s.refunded.length === 0 && !gap && !payment.refundAnswerLost)
      violate(`${payment.id} was refunded without payment.refunded`);
    for (const of of s.refunded)
      if (of === undefined || (settledBy !== undefined && of !== settledBy))
        violate(
          `payment.refunded of ${payment.id} names ${String(of)} as the order's payment; ${String(settledBy)} paid it`,
        );
    if (record?.outcome === 'duplicate' && payment.refunds > 0 && !gap)
      if (payment.refundAnswerLost ? record.refundState !== 'unknown' : record.refund === undefined)
        violate(`${payment.id}: refunded, and its record says ${String(record.refundState)}`);
    // Exactly once in a transaction (docs/exactly-once.md): a handled payment's rows committed once,
    // with its done marker, never without it, never twice (counted at each commit, above).
    if (world.db && TRANSACTIONAL_EVENTS.includes(expectedName)) {
      const runs = world.db.committed.get(payment.id) ?? [];
      const done = (await world.store.claim(outcomeKey(payment.id), 'sim-check', 1)) === 'done';
      const handledOutcome =
        record !== undefined && TRANSACTIONAL_EVENTS.includes(`payment.${record.outcome}` as PaymentEventName);
      if (done && handledOutcome && runs.length === 0)
        violate(`${payment.id}: marked done as ${record?.outcome}, and its handlers' rows never committed`);
      // The inbox model: the rows commit with the inbox row, the store's done marker after them; a
      // marker that never followed (its attempt lost the claim to a dead one, and nothing came back
      // before the end) leaves the row as the one truth for "done": no run commits again (above).
      const inboxRow = world.db.inbox.has(payment.id);
      if (inboxMode && runs.length > 0 && !inboxRow)
        violate(`${payment.id}: its handlers' rows committed without its inbox row`);
      if (runs.length > 0 && !done && !(inboxMode && inboxRow))
        violate(`${payment.id}: its handlers' rows committed without its done marker`);
      if (
        runs.length > 0 &&
        (afterCommits.get(payment.id) ?? 0) === 0 &&
        crashes.length === 0 &&
        lostCommitAnswers === 0
      )
        violate(`${payment.id}: committed, and its afterCommit callback never ran`);
    }
    // From when the plugin could know: the service's answer is final and a path told the plugin.
    const knownAt = Math.max(finalAt, s.firstAskAt ?? finalAt);
    const sweepDeadline = Math.max(finalAt, payment.sessionEndsAt) + GRACE_MS + INTERVAL_MS + BOUNDS.sweepSlackMs;
    const laneLag = Math.max(0, finalAt - (s.firstAskAt ?? finalAt));
    let deadline = s.askedAfterSettle ? knownAt + Math.max(BOUNDS.askedMs, laneLag * BOUNDS.lagFactor) : sweepDeadline;
    // A lag's bound that reaches past the session's end is reconciliation's (docs/confirmations.md):
    // the lane's next check would come after the end, so the entry is back on the session's schedule.
    if (s.askedAfterSettle && laneLag > 0 && deadline > payment.sessionEndsAt)
      deadline = Math.max(deadline, sweepDeadline);
    // Only returns told the plugin while verify lagged (every webhook lost, or it came after the final
    // answer): the short lane reaches lags up to SHORT_LANE_REACH_MS; past it, reconciliation's bound
    // (docs/confirmations.md: the plugin cannot tell this payment from an abandoned checkout).
    const returnsOnly = s.webhookAskAt === undefined || s.webhookAskAt >= finalAt;
    if (s.askedAfterSettle && returnsOnly && laneLag > SHORT_LANE_REACH_MS)
      deadline = Math.max(deadline, sweepDeadline);
    // FINDING (left to the engine's owners): an early webhook that finds the payment pending starts
    // its pending lane while the customer is still at the checkout; a later webhook or return that
    // finds it pending does not start the lane again, it waits for the lane's next check (up to
    // 60 s), or, the lane spent (3.6 min), for the sweep.
    const early = earlyAt.get(payment.id);
    if (early !== undefined) deadline = Math.max(deadline, sweepDeadline + (has('faults') ? BOUNDS.faultsMs : 0));
    // Known only from a webhook (the instance died inside generatePayment): its session's end is not
    // known either, only the latest it can be, up to one session after it (docs/confirmations.md).
    if (early !== undefined && !answered.has(payment.id)) deadline += sessionSecs * 1000;
    // A crash before the handlers succeeded (one may have been running them): its lease, then the
    // service's redelivery; a service that loses its redeliveries leaves it to the sweep.
    for (const c of crashes)
      if (c.at >= finalAt - 2 * LEASE_MS && c.at <= (s.firstSuccessAt ?? horizon)) {
        deadline = Math.max(deadline + BOUNDS.crashMs, c.at + BOUNDS.crashMs);
        if (has('lossy')) deadline = Math.max(deadline, sweepDeadline);
      }
    // A frozen process holds its transaction, so the order's row, until it resumes: the crash's
    // bound counts from then (docs/confirmations.md).
    for (const st of stalls)
      if (st.to >= finalAt - 2 * LEASE_MS && st.from <= (s.firstSuccessAt ?? horizon))
        deadline = Math.max(deadline, st.to + BOUNDS.crashMs);
    // A process frozen while generatePayment's answer was on its way reads the time it dates the
    // session by when it resumes: the session's end it records, and reconciliation's bound, come
    // that much later (as the table's frozen instance, counted from when it resumes; seed 4659).
    const recorded = recordedOn.get(payment.id);
    if (
      recorded &&
      stalls.some((st) => st.instance === recorded.instance && st.from < recorded.at && st.to > payment.createdAt)
    )
      deadline = Math.max(deadline, sweepDeadline + recorded.at - payment.createdAt);
    if (has('faults')) deadline += BOUNDS.faultsMs;
    // Handled means its handlers finished: a slow shop's handler takes up to SLOW_HANDLER_MS itself.
    if (has('slow')) deadline += SLOW_HANDLER_MS;
    // In a transaction, a confirmation waits for another payment's of the same order to end (its row
    // is locked until then): up to that one's handlers' deadline.
    if (
      transactional &&
      [...world.payments.values()].some((p) => p.id !== payment.id && p.trackingId === payment.trackingId)
    )
      deadline += HANDLERS_TIMEOUT_MS;
    for (const [, to] of interrupted)
      if (to >= finalAt - LEASE_MS * 2) {
        deadline = Math.max(deadline, to + BOUNDS.afterOutageMs) + (has('faults') ? BOUNDS.faultsMs : 0);
        // A webhook the outage turned away (503) is redelivered; a service that loses its
        // redeliveries leaves the payment to the sweep, as after a crash.
        if (has('lossy')) deadline = Math.max(deadline, sweepDeadline);
      }
    // A failing handler runs again on the next delivery, return or sweep check (the sweep's fast
    // lane: waits doubling from the interval).
    for (let k = 0; k < s.failures; k++)
      deadline += Math.min(3_600_000, INTERVAL_MS * 2 ** (k + 1)) + BOUNDS.perFailureMs;
    // A step back of the store's clock moves every due time the queue holds (the store's times, and
    // those instances write until they measure that clock again) that much later: whatever the bound
    // above waits for comes that much later, at the next pass after it (the wake set for the old due
    // time found nothing due).
    if (storeStepBackMs > 0) deadline += storeStepBackMs + INTERVAL_MS;
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
    // A payment an early webhook sent down the lane is held to the sweep's bound (above), not measured here.
    if (s.askedAfterSettle && payment.settleAt !== undefined && final !== 'EXPIRED' && early === undefined)
      latencies.push(s.firstSuccessAt - knownAt);
    // The budget: a final answer is fetched once, plus once per failed handler run or interruption.
    const finals = world.ledger.finalAnswers.get(payment.id) ?? 0;
    // Edited returns naming it verify it too when the store could not say they contradict its record.
    // A transaction rolled back (a crash, a lost claim, the order settled by another meanwhile) verifies again.
    const interruptions =
      crashes.length +
      interrupted.length +
      (edits.get(payment.id) ?? 0) +
      (world.db?.rollbacks.get(payment.id) ?? 0) +
      // The inbox model: a COMMIT whose answer was lost leaves the store's done marker to an attempt that verifies again.
      (world.db?.unanswered.get(payment.id) ?? 0);
    if (finals > 1 + s.failures + interruptions)
      violate(`${payment.id}: the service's final answer was fetched ${finals} times`);
    // An abandoned checkout its customer came back to is held to its own budget (below).
    if (unpaidVerifies.has(payment.id)) continue;
    settled++;
    settledVerifies += world.ledger.verifies.get(payment.id) ?? 0;
  }
  // Abandoned checkouts: a return alone earns its first look and a small allowance shared by the
  // fleet, whatever the returns (settlement.evidence.ts). Faults and crashes (a failed verify earns
  // the fast lane), store outages (nothing known: the strangers' budget) and early webhooks (a
  // webhook's PENDING earns the fast lane) are stated apart.
  if (!['faults', 'crashes', 'outage', 'partition', 'early', 'slowstore'].some((s) => stressors.includes(s as Extra)))
    for (const [id, verifies] of unpaidVerifies)
      if (verifies > UNPAID_BUDGET)
        violate(`abandoned checkout ${id} cost ${verifies} verify calls in its session (budget ${UNPAID_BUDGET})`);
  let strangerVerifies = 0;
  for (const id of strangersSeen) {
    strangerVerifies += world.ledger.verifies.get(id) ?? 0;
    const notFound = world.ledger.notFound.get(id) ?? 0;
    if (notFound > everStarted.length)
      violate(`stranger id ${id} answered 404 ${notFound} times across ${everStarted.length} instance(s)`);
  }
  // The fleet's budget, in the store, whatever the instances and their restarts: 5 verifies for
  // unknown ids a minute; a burst (20 s) may straddle two of a slot's windows. Plus the transport's
  // retries of an attempt that failed.
  const strangerBound = strangerBursts * 2 * 5 * (has('faults') ? 3 : 1);
  if (strangerVerifies > strangerBound)
    violate(`strangers' ids cost ${strangerVerifies} verify calls (bound ${strangerBound})`);
  for (const line of world.ledger.logs) leakCheck('a log line', line, violate);
  if (process.env.SIM_DEBUG)
    trace.push(
      `store down: ${storeDown.map(([a, b]) => `${(a - T0) / 1000}-${(b - T0) / 1000}s`).join(' ')}; crashes: ${crashes.map((c) => `#${c.instance.index}@${(c.at - T0) / 1000}s`).join(' ')}; session ${sessionSecs}s${storeStepBackMs > 0 ? `; the store's clock stepped back ${storeStepBackMs / 1000}s at ${(world.storeClockSteppedAt - T0) / 1000}s` : ''}`,
    );
  if (process.env.SIM_DEBUG)
    process.stdout.write(
      `${[...trace, ...world.ledger.logs.filter((l) => process.env.SIM_DEBUG === 'all' || l.includes(process.env.SIM_DEBUG as string))].join('\n')}\n`,
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
for (const secret of SECRETS)
  for (const form of [
    secret,
    encodeURIComponent(secret),
    JSON.stringify(secret).slice(1, -1),
    secret.replace(/[^A-Za-z0-9]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`),
  ])
    for (let i = 0; i + 8 <= form.length; i++) SECRET_RUNS.add(form.slice(i, i + 8));

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** No run of 8 characters of a secret (as written, URL-encoded or JSON-escaped), in any text the engine let out. */
function leakCheck(where: string, text: string, violate: (m: string) => void): void {
  for (let i = 0; i + 8 <= text.length; i++) {
    if (SECRET_RUNS.has(text.slice(i, i + 8)))
      return void violate(`${where} carries part of a secret: ${text.slice(0, 120)}`);
  }
}
