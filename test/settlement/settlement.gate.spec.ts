/**
 * The verify gate (settlement.gate.ts), its verify budget: the circuit breaker as a pure rule
 * (table), then the budget a client holds webhooks and returns to, on a compressed clock. (The
 * strangers' budget and the unbound-token policy run in test/faults and test/outcomes.)
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
} from '../../lib/core/settlement/settlement.gate.js';
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
