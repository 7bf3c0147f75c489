/**
 * The verify gate (settlement.gate.ts): the circuit breaker and the verify budget's check as pure
 * rules (tables), the one decision of every stage that asks it (verifyGate: a row per rule), then
 * the budget a client holds webhooks and returns to, on a compressed clock. (The strangers' budget
 * and the unbound-token policy run in test/faults and test/outcomes.)
 */
import { describe, expect, it } from '@jest/globals';
import {
  PaymentsApiError,
  PaymentsConnectionError,
  PaymentsRateLimitedError,
} from '../../lib/core/api/payments.errors.js';
import {
  BREAKER_THRESHOLD,
  breakerAdmit,
  breakerAfter,
  CLOSED,
  gateCheck,
  VerifyBudget,
  type BreakerState,
  type Deferral,
  type GateState,
  isRecent,
  verifyGate,
  type ClaimAsk,
  type ClaimVerdict,
  type ReturnAsk,
  type ReturnVerdict,
  type StrangerGate,
  type UnboundAsk,
  type UnboundVerdict,
  type UnsignedAsk,
  type UnsignedVerdict,
} from '../../lib/core/settlement/settlement.gate.js';
import type { OutcomeRecord, PendingPayment } from '../../lib/core/store/index.js';
import type { Decision } from '../../lib/core/settlement/settlement.decision.js';

const COOLDOWN = 10_000;

describe('breakerAdmit / breakerAfter (table)', () => {
  const open = (until: number, failures = BREAKER_THRESHOLD): BreakerState => ({ failures, openUntil: until });
  it.each<[string, BreakerState, number, boolean, BreakerState]>([
    ['closed: every call goes through', CLOSED, 5, true, CLOSED],
    ['open, before its time: refused', open(100), 99, false, open(100)],
    ['open, at its time: one probe, and open again for the cooldown', open(100), 100, true, open(100 + COOLDOWN)],
    ['open, long after: one probe', open(100), 50_000, true, open(50_000 + COOLDOWN)],
    // Opened for the cooldown at most: an end further ahead was set before the clock stepped back.
    ['open, its end further ahead than a cooldown: one probe', open(100_000), 50_000, true, open(50_000 + COOLDOWN)],
  ])('%s', (_name, state, now, allowed, after) => {
    expect(breakerAdmit(state, now, COOLDOWN)).toEqual({ allowed, state: after });
  });

  it.each<[string, BreakerState, boolean, BreakerState]>([
    ['an answer closes it', open(100), true, CLOSED],
    ['a first failure counts', CLOSED, false, { failures: 1, openUntil: 0 }],
    [
      'the threshold-th failure in a row opens it',
      { failures: BREAKER_THRESHOLD - 1, openUntil: 0 },
      false,
      open(1_000 + COOLDOWN),
    ],
    [
      "a probe's failure opens it again",
      open(900, BREAKER_THRESHOLD),
      false,
      open(1_000 + COOLDOWN, BREAKER_THRESHOLD + 1),
    ],
  ])('%s', (_name, state, answered, after) => {
    expect(breakerAfter(state, answered, 1_000, COOLDOWN)).toEqual(after);
  });
});

describe('gateCheck (table): may a path call verify on a payment now?', () => {
  const failed = new PaymentsApiError('API_ERROR', { operation: 'verifyPayment', httpStatus: 503 });
  const limited = new PaymentsRateLimitedError({ operation: 'verifyPayment', httpStatus: 429, retryAfterSecs: 20 });
  const NOW = 100_000;
  const state = (over: Partial<GateState> = {}): GateState => ({
    remembered: [],
    pause: { since: 0, until: 0 },
    breaker: CLOSED,
    ...over,
  });
  const opened: BreakerState = { failures: BREAKER_THRESHOLD, openUntil: NOW + 4_000 };
  it.each<[string, GateState, Deferral | undefined, BreakerState]>([
    ['nothing known: verify now', state(), undefined, CLOSED],
    [
      'a failed verify remembered: answered from memory',
      state({ remembered: [{ since: NOW - 1_000, until: NOW + 9_000, pending: false, error: failed }] }),
      { pending: false, retryAfterSecs: 9, error: failed },
      CLOSED,
    ],
    [
      "the asking path's PENDING remembered (second slot)",
      state({ remembered: [undefined, { since: NOW, until: NOW + 10_000, pending: true }] }),
      { pending: true, retryAfterSecs: 10, error: undefined },
      CLOSED,
    ],
    [
      'a memory past its time: forgotten',
      state({ remembered: [{ since: NOW - 20_000, until: NOW, pending: true }] }),
      undefined,
      CLOSED,
    ],
    [
      'a memory from before a clock stepped back: forgotten',
      state({ remembered: [{ since: NOW + 5_000, until: NOW + 15_000, pending: true }] }),
      undefined,
      CLOSED,
    ],
    [
      "within a 429's pause: deferred, rate-limited",
      state({ pause: { since: NOW - 1_000, until: NOW + 19_500, error: limited } }),
      { pending: false, retryAfterSecs: 20, error: limited, rateLimited: true },
      CLOSED,
    ],
    [
      'a pause begun after now (the clock stepped back): not paused',
      state({ pause: { since: NOW + 1_000, until: NOW + 30_000 } }),
      undefined,
      CLOSED,
    ],
    [
      'the breaker open: deferred with its error',
      state({ breaker: opened, breakerError: failed }),
      { pending: false, retryAfterSecs: 4, error: failed },
      opened,
    ],
    [
      'the breaker at its time: one probe, and open again for the cooldown',
      state({ breaker: { failures: BREAKER_THRESHOLD, openUntil: NOW }, breakerError: failed }),
      undefined,
      { failures: BREAKER_THRESHOLD, openUntil: NOW + COOLDOWN },
    ],
    [
      'memory first: a remembered payment leaves the breaker as it is',
      state({ remembered: [{ since: NOW, until: NOW + 1_000, pending: true }], breaker: opened }),
      { pending: true, retryAfterSecs: 1, error: undefined },
      opened,
    ],
  ])('%s', (_name, given, deferral, breaker) => {
    expect(gateCheck(given, NOW, COOLDOWN)).toEqual({ deferral, breaker });
  });
});

describe('verifyGate (table): may this path call verify now, and if not what does it answer?', () => {
  const failed = new PaymentsApiError('API_ERROR', { operation: 'verifyPayment', httpStatus: 503 });
  const missing = new PaymentsApiError('NOT_FOUND', { operation: 'verifyPayment', httpStatus: 404 });
  const NOW = Date.parse('2026-01-01T00:00:00Z');
  const at = (ms: number) => new Date(NOW + ms).toISOString();

  describe('claim: the runner, before it claims a payment', () => {
    const never = () => {
      throw new Error('the verify budget was asked');
    };
    const paused: Deferral = { pending: false, retryAfterSecs: 7, error: failed, rateLimited: true };
    const remembered: Deferral = { pending: true, retryAfterSecs: 10 };
    it.each<[string, ClaimAsk, ClaimVerdict]>([
      [
        'reconciliation: not held to the budget (never asked)',
        { stage: 'claim', path: 'reconciliation', budget: never },
        { kind: 'verify' },
      ],
      [
        'a webhook the budget admits: verify',
        { stage: 'claim', path: 'webhook', budget: () => undefined },
        { kind: 'verify' },
      ],
      [
        'a return the budget admits: verify',
        { stage: 'claim', path: 'return', budget: () => undefined },
        { kind: 'verify' },
      ],
      [
        "a webhook's PENDING remembered: deferred, no re-check (the next delivery or the lane checks it)",
        { stage: 'claim', path: 'webhook', budget: () => remembered },
        { kind: 'deferred', deferral: remembered },
      ],
      [
        'the service failing or rate-limiting: deferred, a queued payment re-checked when the pause ends',
        { stage: 'claim', path: 'return', budget: () => paused },
        { kind: 'deferred', deferral: paused, recheckInMs: 7_000 },
      ],
    ])('%s', (_name, ask, verdict) => {
      expect(verifyGate(ask)).toEqual(verdict);
    });
  });

  describe('unbound: a signed token the store has no binding of, once its payment is claimed', () => {
    it.each<[string, UnboundAsk, UnboundVerdict]>([
      ["within the token's limit: verify", { stage: 'unbound', policy: { waitSecs: undefined } }, { kind: 'verify' }],
      [
        "over the token's limit: rate-limited for the policy's wait",
        { stage: 'unbound', policy: { waitSecs: 30 } },
        { kind: 'rate-limited', retryAfterSecs: 30 },
      ],
      ['the store away: store-unavailable', { stage: 'unbound', policy: 'unreachable' }, { kind: 'store-unavailable' }],
    ])('%s', (_name, ask, verdict) => {
      expect(verifyGate(ask)).toEqual(verdict);
    });
  });

  describe('unsigned: a delivery without a token, before the runner', () => {
    const ask = (over: Partial<UnsignedAsk>): UnsignedAsk => ({
      stage: 'unsigned',
      intervalSecs: 30,
      queued: true,
      ...over,
    });
    it.each<[string, UnsignedAsk, UnsignedVerdict]>([
      ['not queued: its record is read', ask({ queued: false }), { kind: 'ask', what: 'record' }],
      ['not queued, recorded: a done payment (duplicate)', ask({ queued: false, recorded: true }), { kind: 'done' }],
      ['not queued, nothing recorded: unknown (404)', ask({ queued: false, recorded: false }), { kind: 'unknown' }],
      ["queued: the payment's slot of the interval is taken", ask({}), { kind: 'ask', what: 'slot' }],
      ['queued, slot taken: verify', ask({ slot: true }), { kind: 'verify' }],
      [
        'queued, slot taken already: rate-limited for the interval',
        ask({ slot: false }),
        { kind: 'rate-limited', retryAfterSecs: 30 },
      ],
    ])('%s', (_name, given, verdict) => {
      expect(verifyGate(given)).toEqual(verdict);
    });
  });

  describe('return: the return check, before the runner', () => {
    const record = (over: Partial<OutcomeRecord>): OutcomeRecord =>
      ({
        paymentId: 'p',
        status: 'PENDING',
        outcome: 'pending',
        source: 'return',
        updatedAt: at(-20_000),
        ...over,
      }) as OutcomeRecord;
    const entry = (rechecks?: number): PendingPayment =>
      ({ paymentId: 'p', amount: '1000', rechecks }) as PendingPayment;
    const known = (r: OutcomeRecord | undefined | null, e: PendingPayment | undefined | null) => ({
      record: r,
      entry: e,
      now: NOW,
    });
    const ask = (over: Partial<ReturnAsk>): ReturnAsk => ({ stage: 'return', path: 'return', ...over });
    const strangers = (gate: StrangerGate) => ask({ known: known(undefined, undefined), strangers: gate });
    it.each<[string, ReturnAsk, ReturnVerdict]>([
      [
        'a 404 remembered: not found (before any store read)',
        ask({ notFound: missing }),
        { kind: 'not-found', error: missing },
      ],
      ['nothing read yet: the record and the queue entry are read', ask({}), { kind: 'ask', what: 'records' }],
      [
        'a recent pending record: pending with its status, no verify',
        ask({ known: known(record({ updatedAt: at(-1_000) }), entry()) }),
        { kind: 'pending', status: 'PENDING', lookAgain: false },
      ],
      [
        'a pending record dated in the future (a clock ahead): not recent, the allowance is asked for',
        ask({ known: known(record({ updatedAt: at(60_000) }), entry()) }),
        { kind: 'ask', what: 'allowance' },
      ],
      [
        "nothing known of it: the strangers' budget is asked",
        ask({ known: known(undefined, undefined) }),
        { kind: 'ask', what: 'strangers' },
      ],
      [
        'a stranger the service said 404 for meanwhile: not found',
        strangers({ kind: 'not-found', error: missing }),
        { kind: 'not-found', error: missing },
      ],
      [
        'a stranger over budget: pending, and the lane looks for it',
        strangers({ kind: 'over-budget' }),
        { kind: 'pending', status: '', lookAgain: true },
      ],
      ['a stranger within budget: verify', strangers({ kind: 'allowed' }), { kind: 'verify' }],
      [
        'the store away (null): not a stranger, first look',
        ask({ known: known(null, null) }),
        { kind: 'verify', pendingLane: 'short' },
      ],
      [
        'queued, no lane: first look, a PENDING starts the short lane',
        ask({ known: known(undefined, entry()) }),
        { kind: 'verify', pendingLane: 'short' },
      ],
      [
        'in the fast lane: verify, a PENDING keeps it',
        ask({ known: known(undefined, entry(2)) }),
        { kind: 'verify', pendingLane: 'fast' },
      ],
      [
        'a webhook found it pending: the fast lane',
        ask({ known: known(record({ source: 'webhook' }), entry()) }),
        { kind: 'verify', pendingLane: 'fast' },
      ],
      [
        'only returns found it pending: a slot of the allowance is asked for',
        ask({ known: known(record({}), entry()) }),
        { kind: 'ask', what: 'allowance' },
      ],
      [
        'in the short lane: a slot of the allowance is asked for',
        ask({ known: known(undefined, entry(-3)) }),
        { kind: 'ask', what: 'allowance' },
      ],
      [
        "in the short lane, its latest check's record younger than the lane's longest wait: pending from the record, the slot left to the lane's next check",
        ask({ known: known(record({ source: 'reconciliation', updatedAt: at(-23_000) }), entry(-2)) }),
        { kind: 'pending', status: 'PENDING', lookAgain: false },
      ],
      [
        "in the short lane, its record older than the lane's longest wait (its check overdue): a slot of the allowance is asked for",
        ask({ known: known(record({ source: 'reconciliation', updatedAt: at(-31_000) }), entry(-2)) }),
        { kind: 'ask', what: 'allowance' },
      ],
      [
        'in the short lane, its record dated in the future (a clock ahead): a slot of the allowance is asked for',
        ask({ known: known(record({ updatedAt: at(60_000) }), entry(-2)) }),
        { kind: 'ask', what: 'allowance' },
      ],
      [
        "the allowance spent: pending with the record's status, no verify",
        ask({ known: known(record({}), entry()), allowance: false }),
        { kind: 'pending', status: 'PENDING', lookAgain: false },
      ],
      [
        'the allowance spent, no record: pending with no status',
        ask({ known: known(undefined, entry(-2)), allowance: false }),
        { kind: 'pending', status: '', lookAgain: false },
      ],
      [
        'a slot of the allowance taken: verify, a PENDING earns no lane',
        ask({ known: known(record({}), entry()), allowance: true }),
        { kind: 'verify', pendingLane: 'none' },
      ],
      [
        'another path through reconcilePayment: no allowance asked, no lane',
        ask({ path: 'reconciliation', known: known(record({}), entry(-3)) }),
        { kind: 'verify' },
      ],
    ])('%s', (_name, given, verdict) => {
      expect(verifyGate(given)).toEqual(verdict);
    });

    it.each<[string, number, boolean]>([
      ['written just now', 0, true],
      ['written within the interval', -9_000, true],
      ['written an interval ago', -10_000, false],
      ['dated a little ahead (clock jitter)', 1_500, true],
      ['dated further ahead', 2_000, false],
    ])('isRecent: %s', (_name, offset, recent) => {
      expect(isRecent(at(offset), NOW, 10_000)).toBe(recent);
    });
  });
});

describe('VerifyBudget', () => {
  const unverified = (retryAfterSecs?: number, rateLimitedSecs?: number): Decision => ({
    kind: 'unverified',
    retryAfterSecs,
    rateLimitedSecs,
  });
  const down = () => new PaymentsApiError('API_ERROR', { operation: 'verifyPayment', httpStatus: 503 });
  const clock = () => {
    let now = 1_000_000;
    return { now: () => now, advance: (ms: number) => void (now += ms) };
  };

  it('remembers a payment still pending for one interval, then lets it be verified again', () => {
    const t = clock();
    const budget = new VerifyBudget(COOLDOWN, t.now);
    expect(budget.admit('p', 'webhook')).toBeUndefined();
    budget.note('p', 'webhook', { kind: 'pending' }, undefined);
    expect(budget.admit('p', 'webhook')).toEqual({ pending: true, retryAfterSecs: 10, error: undefined });
    expect(budget.admit('q', 'webhook')).toBeUndefined();
    // A PENDING the return page saw does not hold back the webhook that follows it (the return
    // path itself reads the outcome record for its own).
    budget.note('r', 'return', { kind: 'pending' }, undefined);
    expect(budget.admit('r', 'webhook')).toBeUndefined();
    expect(budget.admit('r', 'return')).toBeUndefined();
    t.advance(COOLDOWN);
    expect(budget.admit('p', 'webhook')).toBeUndefined();
  });

  it('a clock stepped back (NTP, a VM restore) holds no verify back for longer than its window', () => {
    const t = clock();
    const budget = new VerifyBudget(COOLDOWN, t.now);
    budget.note('p', 'webhook', { kind: 'pending' }, undefined);
    budget.note('f', 'return', unverified(), down());
    budget.note('r', 'webhook', unverified(undefined, 20), undefined);
    t.advance(-870_000);
    // Remembered before the step: what they say cannot be trusted, so they hold nothing back.
    expect(budget.admit('p', 'webhook')).toBeUndefined();
    expect(budget.admit('f', 'return')).toBeUndefined();
    expect(budget.admit('r', 'webhook')).toBeUndefined();
    // And what is remembered after the step holds as long as it says.
    budget.note('p', 'webhook', { kind: 'pending' }, undefined);
    expect(budget.admit('p', 'webhook')).toEqual({ pending: true, retryAfterSecs: 10, error: undefined });
  });

  it('a 429 pauses every payment until its Retry-After', () => {
    const t = clock();
    const budget = new VerifyBudget(COOLDOWN, t.now);
    const error = new PaymentsRateLimitedError({ operation: 'verifyPayment', httpStatus: 429, retryAfterSecs: 25 });
    budget.note('p', 'webhook', unverified(25, 25), error);
    expect(budget.admit('q', 'webhook')).toMatchObject({
      pending: false,
      retryAfterSecs: 25,
      rateLimited: true,
      error,
    });
    t.advance(25_000);
    expect(budget.admit('q', 'webhook')).toBeUndefined();
  });

  it('opens after three payments in a row found the service down, probes once per interval, closes on an answer', () => {
    const t = clock();
    const budget = new VerifyBudget(COOLDOWN, t.now);
    for (const id of ['a', 'b', 'c']) budget.note(id, 'return', unverified(5), down());
    expect(budget.admit('d', 'webhook')).toMatchObject({ pending: false, retryAfterSecs: 10 });
    t.advance(COOLDOWN);
    expect(budget.admit('d', 'webhook')).toBeUndefined(); // the probe
    expect(budget.admit('e', 'return')).toMatchObject({ pending: false }); // only one probe
    budget.note('d', 'webhook', { kind: 'settle', outcome: 'confirmed', event: 'payment.confirmed' }, undefined);
    expect(budget.admit('e', 'return')).toBeUndefined();
  });

  it('a connection failure counts as down; a 404 is an answer and does not', () => {
    const t = clock();
    const budget = new VerifyBudget(COOLDOWN, t.now);
    const refused = new PaymentsConnectionError({
      operation: 'verifyPayment',
      code: 'CONNECTION_FAILED',
      mayHaveBeenProcessed: false,
      attempts: 1,
      reason: 'ECONNREFUSED',
    });
    const missing = new PaymentsApiError('NOT_FOUND', { operation: 'verifyPayment', httpStatus: 404 });
    budget.note('a', 'webhook', unverified(5), refused);
    budget.note('b', 'webhook', unverified(), missing);
    budget.note('c', 'webhook', unverified(5), refused);
    expect(budget.admit('d', 'webhook')).toBeUndefined();
  });

  it('a failed refund call counts as a verify would: a 429 pauses every path, a service down counts to the breaker, a refusal nothing', () => {
    const t = clock();
    const budget = new VerifyBudget(COOLDOWN, t.now);
    const refund = (status: number) =>
      new PaymentsApiError('API_ERROR', { operation: 'refundPayment', httpStatus: status });
    budget.noteRefund(new PaymentsApiError('REFUND_NOT_ALLOWED', { operation: 'refundPayment', httpStatus: 400 }));
    budget.noteRefund(new Error('not the service'));
    expect(budget.admit('a', 'webhook')).toBeUndefined();
    for (let i = 0; i < BREAKER_THRESHOLD; i++) budget.noteRefund(refund(502));
    expect(budget.admit('a', 'return')).toMatchObject({ pending: false, retryAfterSecs: 10 });
    t.advance(COOLDOWN);
    budget.note('a', 'return', { kind: 'settle', outcome: 'confirmed', event: 'payment.confirmed' }, undefined);
    const limited = new PaymentsRateLimitedError({ operation: 'refundPayment', httpStatus: 429 });
    budget.noteRefund(limited);
    expect(budget.admit('b', 'webhook')).toMatchObject({ rateLimited: true, retryAfterSecs: 30, error: limited });
    t.advance(30_000);
    expect(budget.admit('b', 'webhook')).toBeUndefined();
  });
});
