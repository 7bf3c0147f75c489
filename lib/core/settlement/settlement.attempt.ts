import { randomUUID } from 'node:crypto';
import { assertNever, describe, type PaymentsLogger } from '../common/index.js';
import type { ClaimOutcome, OutcomeFinish, OutcomeSource, PaymentsInbox, PaymentsStore } from '../store/index.js';
import type { PathEvidence } from './settlement.evidence.js';
import type { OutcomeExpectation } from './settlement.decision.js';
import { type AttemptRecord, finishAttempt, finishOf } from './settlement.commit.js';
import { verifyGate, type UnboundAsk } from './settlement.gate.js';
import {
  type SettleObserver,
  type SettleRequest,
  type SettleResult,
  type TokenLookup,
  type UnboundTokenPolicy,
} from './settlement.request.js';
import type { VerifiedPayment } from '../api/index.js';
import { type Clock, type ClockTimer, monotonicNow, type SharedClock, SYSTEM_CLOCK, within } from '../time/index.js';
import type { OutcomeHandlers, PaymentOutcomeEvent } from './payment.events.js';

/**
 * Keeps a claim alive while its handlers run. Handlers may outlast the lease (a slow email, a slow
 * database): the claim would then expire and a redelivery run them a second time, concurrently.
 * So the claim is renewed every third of the lease (a same-owner claim is a renewal in every
 * store). A renewal that finds the claim gone to someone else can only be reported: the handlers
 * are already running.
 *
 * A process frozen past its lease (a stop-the-world pause, a suspended VM) cannot tell from its
 * renewals whether another attempt held the claim meanwhile: one that took it and let it go
 * leaves it free, and the late renewal takes it back. So the holder also counts its lease on its
 * own monotonic time: a gap of more than a lease between two holds (or before the end) is a
 * `lapse`, after which the outcome may have been written by someone else.
 * @param heldSince when the claim was sent (monotonic time of `clock`); the renewals' start by default
 * @returns `stop()`, which ends the renewals and waits for one in flight (it must land before the
 *   claim is marked done or released); `lost` tells whether a renewal found the claim taken;
 *   `lapsed` whether the lease ran out at some point (read after `stop()`)
 */
export function renewWhileHandling(
  store: Pick<PaymentsStore, 'claim'>,
  key: string,
  owner: string,
  leaseMs: number,
  paymentId: string,
  logger: PaymentsLogger,
  clock: Clock = SYSTEM_CLOCK,
  heldSince: number = monotonicNow(clock),
): { stop(): Promise<void>; readonly lost: boolean; readonly lapsed: boolean } {
  return new ClaimRenewal(store, key, owner, leaseMs, paymentId, logger, clock, heldSince);
}

/**
 * {@link renewWhileHandling}'s renewals: one object and one timer function per claim held (every
 * settle that runs handlers holds one, and nearly all of them end before the first renewal).
 */
class ClaimRenewal {
  #renewing: Promise<void> | undefined;
  #lost = false;
  #lapsed = false;
  #heldAt: number;
  #stopped = false;
  #timer: ClockTimer | undefined;
  readonly #period: number;
  // Re-armed before each renewal, as `every` does: a slow renewal does not delay the next tick.
  readonly #tick = (): void => {
    if (this.#stopped) return;
    this.#arm();
    if (this.#lost || this.#renewing) return;
    this.#renewing = this.#renew().finally(() => (this.#renewing = undefined));
  };

  constructor(
    private readonly store: Pick<PaymentsStore, 'claim'>,
    private readonly key: string,
    private readonly owner: string,
    private readonly leaseMs: number,
    private readonly paymentId: string,
    private readonly logger: PaymentsLogger,
    private readonly clock: Clock,
    heldSince: number,
  ) {
    this.#heldAt = heldSince;
    // A running handler keeps the process alive, not its renewals (the clock's timers are unref'd).
    this.#period = Math.max(1, Math.floor(leaseMs / 3));
    this.#arm();
  }

  get lost(): boolean {
    return this.#lost;
  }

  get lapsed(): boolean {
    return this.#lapsed;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.clock.clearTimeout(this.#timer);
    await this.#renewing;
    this.#held(monotonicNow(this.clock));
  }

  #arm(): void {
    this.#timer = this.clock.setTimeout(this.#tick, this.#period);
  }

  #held(at: number): void {
    if (at - this.#heldAt > this.leaseMs) this.#lapsed = true;
    this.#heldAt = at;
  }

  async #renew(): Promise<void> {
    const sent = monotonicNow(this.clock);
    try {
      const claim = await this.store.claim(this.key, this.owner, this.leaseMs);
      if (claim === 'claimed') this.#held(sent);
      if (claim !== 'claimed' && !this.#lost) {
        this.#lost = true;
        this.logger.error(
          `the claim on ${this.paymentId} was lost while its handlers ran (${claim}: its lease of ${this.leaseMs} ms expired before a renewal); another delivery may run them concurrently`,
        );
      }
    } catch (error) {
      // Tried again at the next tick; the lease still runs meanwhile.
      this.logger.warn(`could not renew the claim on ${this.paymentId} while its handlers run: ${describe(error)}`);
    }
  }
}

/** The claim key of a payment's outcome: one per payment, shared by every path and instance. */
export const outcomeKey = (paymentId: string): string => `outcome:${paymentId}`;

/** Settings of the runner. */
export interface SettlementRunnerOptions {
  /** How long one attempt may hold a payment's claim, in ms (renewed while handlers run). */
  leaseMs: number;
  /**
   * How long an attempt's handlers may run, in ms: past it the attempt fails ({@link withinDeadline}, below).
   * Default 60 000.
   */
  handlerTimeoutMs?: number;
  /** How long a done outcome is remembered, in ms. */
  doneTtlMs: number;
  /** How long outcome records are kept, in ms. */
  recordTtlMs: number;
  /** The registration's name, put on every event. */
  registration?: string;
  /**
   * The time shared with the other instances (record times are written with it): measured against
   * the store's clock before each attempt claims (free while the measurement is fresh), so no
   * path dates a record with an instance's own clock.
   */
  clock: SharedClock;
  /**
   * Called when a webhook or a return left the payment unsettled (still pending at the service, a
   * handler failed, or the service gave no answer): the plugin's own re-checks take it from there
   * within seconds, not before `notBeforeMs` (a 429's Retry-After) (settlement.rechecks.ts).
   * Never awaited by the path.
   */
  recheckSoon?: (
    paymentId: string,
    expected: OutcomeExpectation | undefined,
    notBeforeMs?: number,
    evidence?: PathEvidence,
  ) => void;
  /** One confirmation per order (settlement.orders.ts); absent: every successful payment is confirmed. */
  orders?: OrderScreenPort;
  /**
   * What holds a signed token without a binding to its verify budget and re-binds it
   * (settlement.gate.ts's `UnboundTokens`, over `webhook.unsignedIntervalSecs`).
   */
  unbound: UnboundTokenPolicy;
  /**
   * The inbox in the host's database (docs/exactly-once.md): the handlers run in its transaction,
   * with its done row. Default: none.
   */
  inbox?: PaymentsInbox;
}

/** The order screen as the runner sees it. */
export interface OrderScreenPort {
  /**
   * Settles the payment's order, or finds it settled by another payment. Resolves `undefined`
   * when the payment is the one that settles it (or has no tracking id): the runner confirms it.
   * Otherwise it handled the payment as a duplicate (or failed to) and its result is the settle's;
   * the attempt's claim is then finished. A payment the order's checkout superseded (a cart that
   * changed) while nobody settled the order: `superseded`, which the runner reports as a mismatch
   * (settlement.duplicates.ts); the claim is still held. A held pre-authorization (`check`) is only
   * read against the order (`orderScreenOf`): a duplicate when another payment paid it, never settling it.
   * @param attempt the attempt that holds the payment's claim
   * @param verification the service's answer (`SUCCESS` or `PREAUTH_SUCCESS`)
   * @param handlers the handlers of `payment.duplicate`
   * @param mode `settle` (a paid payment) or `check` (a held pre-authorization: read, never settled)
   */
  screen(
    attempt: Attempt,
    verification: VerifiedPayment,
    handlers: OutcomeHandlers,
    mode: 'settle' | 'check',
  ): Promise<SettleResult | SupersededPayment | undefined>;
  /**
   * With a transactional store, settles the confirmed payment's order through the transaction its
   * handlers run in, before they run: throws when another payment settled the order meanwhile.
   */
  settleInTransaction(event: PaymentOutcomeEvent): Promise<void>;
}

/** A paid payment of a cart the order no longer has, while nobody settled the order: never confirmed. */
export interface SupersededPayment {
  kind: 'superseded';
  /** What the mismatch is reported with. */
  problems: string[];
}

/** What claiming a payment found: the claim, and what to expect of the payment once it is held. */
export type Claimed =
  { kind: 'foreign' } | { kind: 'held'; claim: ClaimOutcome; expected?: OutcomeExpectation; unbound?: TokenLookup };

const UNOBSERVED: SettleObserver = { handlers: (_name, run) => run() };

/** What every attempt of one runner shares: the store its claim lives in, the settings, the log. */
export interface AttemptDeps {
  /** Claims, records, the queue. */
  store: PaymentsStore;
  /** Leases, TTLs, the shared clock, the re-checks. */
  options: SettlementRunnerOptions;
  /** Where problems are reported. */
  logger: PaymentsLogger;
}

/**
 * One attempt at a payment's outcome, made by the settlement runner: what the attempt knows (the
 * payment, the path, what to expect, who watches it) and the end of its claim (release, finish,
 * renewal). The runner claims with its key and owner; whatever the attempt hands on (the order
 * screen, the commit) ends the claim through it, so the claim has one owner.
 */
export class Attempt {
  /** The payment. */
  readonly paymentId: string;
  /** The path that asks. */
  readonly source: OutcomeSource;
  /** The claim key of the payment's outcome. */
  readonly key: string;
  /** This attempt's identity as the claim's holder. */
  readonly owner = randomUUID();
  /** A signed webhook's token, when the path has one. */
  readonly token?: TokenLookup;
  /** What watches the handlers. */
  readonly observe: SettleObserver;
  /** What to expect of the payment: the request's, then the token's binding once the claim read it. */
  expected?: OutcomeExpectation;
  /** When the claim was sent, on the clock's monotonic time: its lease counts from there at the latest. */
  #claimedAt?: number;

  /**
   * @param request what the path asked
   * @param deps the store, settings and log of the runner
   */
  constructor(
    readonly request: SettleRequest,
    private readonly deps: AttemptDeps,
  ) {
    this.paymentId = request.paymentId;
    this.source = request.source;
    this.key = outcomeKey(request.paymentId);
    this.token = request.token;
    this.observe = request.observe ?? UNOBSERVED;
    this.expected = request.expected;
  }

  /** The claim's lease, in ms. */
  get leaseMs(): number {
    return this.deps.options.leaseMs;
  }

  /**
   * Claims the payment for this attempt (the runner's settle). A signed token's binding is read in
   * the claim's round trip and says what to expect; a token the store forgot says it itself, and
   * the runner gates it before its verify.
   * @throws what the store threw; the claim, which may still land, is then given back
   */
  async claim(): Promise<Claimed> {
    const { store, options } = this.deps;
    const { token, key, owner, paymentId } = this;
    this.#claimedAt = monotonicNow(options.clock);
    try {
      const found = token
        ? await store.findBindingAndClaim(token.id, paymentId, key, owner, options.leaseMs)
        : undefined;
      const binding = found?.binding;
      if (binding && binding.paymentId !== paymentId) return { kind: 'foreign' };
      if (binding && found.claim) {
        return {
          kind: 'held',
          claim: found.claim,
          expected: { amount: binding.amount, developerTrackingId: binding.developerTrackingId, origin: 'binding' },
        };
      }
      const claim = await store.claim(key, owner, options.leaseMs);
      return token
        ? { kind: 'held', claim, expected: token.expected, unbound: token }
        : { kind: 'held', claim, expected: this.expected };
    } catch (error) {
      this.abandonClaim();
      throw error;
    }
  }

  /**
   * Runs `work` while this attempt holds the payment's claim, then releases it (see the runner's `hold`).
   * @returns `held` once `work` ran; `done` or `busy` as the claim found the payment
   */
  async hold(work: () => Promise<void>): Promise<'held' | 'done' | 'busy'> {
    let claim: ClaimOutcome;
    this.#claimedAt = monotonicNow(this.deps.options.clock);
    try {
      claim = await this.deps.store.claim(this.key, this.owner, this.deps.options.leaseMs);
    } catch (error) {
      this.abandonClaim();
      throw error;
    }
    if (claim !== 'claimed') return claim;
    try {
      await work();
    } finally {
      await this.release();
    }
    return 'held';
  }

  /** Gives the claim back; a failure is logged (the lease expires on its own). Never throws. */
  async release(): Promise<void> {
    try {
      await this.deps.store.release(this.key, this.owner);
    } catch (error) {
      // The lease expires on its own; the next attempt after it runs the outcome.
      this.deps.logger.error(`could not release ${this.key}: ${describe(error)}`);
    }
  }

  /**
   * Holds a claimed payment of a signed token without a binding to that token's verify budget
   * (settlement.gate.ts): over it, or with the store away, the claim goes back.
   * @param policy what holds tokens without a binding to their budget
   * @param token the token the store had no binding of
   * @returns what to answer instead of verifying, or undefined to go on
   */
  async gate(policy: UnboundTokenPolicy, token: TokenLookup): Promise<SettleResult | undefined> {
    let answer: UnboundAsk['policy'];
    let failure: unknown;
    try {
      answer = { waitSecs: await policy.admit(token) };
    } catch (error) {
      answer = 'unreachable';
      failure = error;
    }
    const gate = verifyGate({ stage: 'unbound', policy: answer });
    switch (gate.kind) {
      case 'verify':
        return undefined;
      case 'rate-limited':
        await this.release();
        return { kind: 'rate-limited', retryAfterSecs: gate.retryAfterSecs };
      case 'store-unavailable':
        await this.release();
        this.deps.logger.error(`${this.source}: store unreachable while rate-limiting a token: ${describe(failure)}`);
        return { kind: 'store-unavailable', error: describe(failure) };
      default:
        return assertNever(gate);
    }
  }

  /**
   * A claim whose answer never came (the store did not answer): it may still land, so it is given
   * back without waiting, or the next attempt would wait a whole lease (every store sends the
   * release after the claim).
   */
  abandonClaim(): void {
    void this.deps.store.release(this.key, this.owner).catch(() => undefined);
  }

  /**
   * Ends the attempt: marked done or released, with its outcome record (settlement.commit.ts).
   * @returns whether the claim was marked done
   */
  finish(claim: 'done' | 'release', record: AttemptRecord): Promise<boolean> {
    const { store, options, logger } = this.deps;
    return finishAttempt(store, options, logger, finishOf(options, this.key, this.owner, claim, this.source, record));
  }

  /** The attempt's end as the store writes it, for a commit that writes it itself. */
  finishOf(claim: 'done' | 'release', record: AttemptRecord): OutcomeFinish {
    return finishOf(this.deps.options, this.key, this.owner, claim, this.source, record);
  }

  /** Renews the claim every third of the lease while handlers run (`renewWhileHandling`, above). */
  renew(): { stop(): Promise<void>; readonly lost: boolean; readonly lapsed: boolean } {
    const { store, options, logger } = this.deps;
    return renewWhileHandling(
      store,
      this.key,
      this.owner,
      options.leaseMs,
      this.paymentId,
      logger,
      options.clock,
      this.#claimedAt,
    );
  }

  /**
   * Runs handlers for at most `handlerTimeoutMs` ({@link withinDeadline}, below): past it the returned
   * promise rejects, so that the caller stops renewing the claim and fails the attempt.
   */
  withinDeadline(work: () => Promise<void>): Promise<void> {
    const { options, logger } = this.deps;
    return withinDeadline(work, {
      paymentId: this.paymentId,
      timeoutMs: options.handlerTimeoutMs ?? DEFAULT_HANDLER_TIMEOUT_MS,
      clock: options.clock,
      logger,
    });
  }

  /**
   * A webhook or a return that left the payment unsettled hands it to the plugin's re-checks (the
   * reconciliation's own checks schedule their next one themselves).
   */
  recheckSoon(expected: OutcomeExpectation | undefined, notBeforeMs?: number, evidence?: PathEvidence): void {
    if (this.source !== 'reconciliation')
      this.deps.options.recheckSoon?.(this.paymentId, expected, notBeforeMs, evidence);
  }
}

/**
 * `handlers.timeoutMs` when none is given: the claim's default lease, so a handler holds a payment
 * at most as long as a crashed instance would block it. Generous on purpose: a run cut off may
 * still be running when the next one starts, which a slow but healthy handler must not suffer.
 */
export const DEFAULT_HANDLER_TIMEOUT_MS = 60_000;

/** What a run of handlers that outlived its deadline fails with. */
export class HandlerDeadlineError extends Error {
  /**
   * @param paymentId the payment whose handlers ran
   * @param timeoutMs the deadline they missed
   */
  constructor(paymentId: string, timeoutMs: number) {
    super(`the handlers of ${paymentId} did not finish within ${timeoutMs} ms (handlers.timeoutMs)`);
    this.name = 'HandlerDeadlineError';
  }
}

/**
 * Runs an attempt's handlers for at most `timeoutMs` of `clock`'s time. A handler that never
 * returns would otherwise keep the payment's claim renewed for ever (no other path could settle
 * it) and hold `close()` for ever. Past the deadline the run fails with {@link HandlerDeadlineError}
 * (the attempt then stops renewing and takes the usual failure path: released, re-checked later);
 * the handlers' promise is abandoned, not cancelled (JavaScript cannot), and how it ends later is
 * logged. A handler that outlives its deadline may thus still be running when the next attempt
 * runs it again: handlers must be idempotent, as for any failure.
 */
export function withinDeadline(
  work: () => Promise<void>,
  run: { paymentId: string; timeoutMs: number; clock: Clock; logger: PaymentsLogger },
): Promise<void> {
  const { paymentId, timeoutMs, clock, logger } = run;
  return within(
    work(),
    clock,
    timeoutMs,
    () => {
      const error = new HandlerDeadlineError(paymentId, timeoutMs);
      logger.error(`${error.message}: abandoned, the claim released; the payment is checked again later`);
      throw error;
    },
    {
      ended: (failed, error, late) => {
        if (!late) return;
        if (failed)
          logger.error(
            `the abandoned handlers of ${paymentId} failed after their deadline of ${timeoutMs} ms: ${describe(error)}`,
          );
        else logger.warn(`the abandoned handlers of ${paymentId} finished after their deadline of ${timeoutMs} ms`);
      },
    },
  );
}
