/**
 * The rule that makes a payment paid, tested as a rule (like a retry policy): every known status
 * and an unknown one x amount match / mismatch / absent x tracking id match / mismatch / absent x
 * each origin of the expectation, plus the failures of the verify call. The oracle below states
 * the rules in plain terms, independently of how decide() is written; a few named rows spell the
 * important cases out. Then a property test over random answers: zero false confirmations.
 */
import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  PaymentsApiError,
  PaymentsConnectionError,
  PaymentsError,
  PaymentsRateLimitedError,
} from '../../lib/core/api/payments.errors.js';
import type { VerifiedPayment } from '../../lib/core/api/payments.types.js';
import {
  decide,
  doneOutcomeOf,
  type Decision,
  type OutcomeExpectation,
} from '../../lib/core/settlement/settlement.decision.js';
import { trackingHash } from '../../lib/core/webhook/webhook.token.js';

const ID = 'pay_1';
const AMOUNT = '12500';
const TRACKING = 'order-7';

const STATUSES = [
  'SUCCESS',
  'FAILURE',
  'SYSTEM_FAILURE',
  'EXPIRED',
  'PREAUTH_SUCCESS',
  'PENDING',
  'success',
  'REFUNDED?',
] as const;
const FINAL: Record<string, { outcome: string; event: string }> = {
  SUCCESS: { outcome: 'confirmed', event: 'payment.confirmed' },
  FAILURE: { outcome: 'failed', event: 'payment.failed' },
  SYSTEM_FAILURE: { outcome: 'failed', event: 'payment.failed' },
  EXPIRED: { outcome: 'expired', event: 'payment.expired' },
  PREAUTH_SUCCESS: { outcome: 'authorized', event: 'payment.authorized' },
};
type Match = 'match' | 'mismatch' | 'absent';
type Origin = 'binding' | 'token-with-tracking' | 'token-without-tracking' | 'caller' | 'none';
const MATCHES: Match[] = ['match', 'mismatch', 'absent'];
const ORIGINS: Origin[] = ['binding', 'token-with-tracking', 'token-without-tracking', 'caller', 'none'];

/** The verified answer: the payment was made for AMOUNT with TRACKING. */
function verification(status: string): VerifiedPayment {
  return { paymentId: ID, status, amount: AMOUNT, developerTrackingId: TRACKING };
}

/** What the path expects, by origin, with the amount and tracking id matching or not (or absent). */
function expectation(origin: Origin, amount: Match, tracking: Match): OutcomeExpectation | undefined {
  const expectedAmount = amount === 'match' ? AMOUNT : amount === 'mismatch' ? '99000' : undefined;
  const expectedTracking = tracking === 'match' ? TRACKING : tracking === 'mismatch' ? 'order-8' : undefined;
  switch (origin) {
    case 'none':
      return undefined;
    case 'binding':
    case 'caller':
      return { amount: expectedAmount, developerTrackingId: expectedTracking, origin };
    case 'token-with-tracking':
    case 'token-without-tracking': {
      // A token always carries the amount it was signed for, and a hash of the tracking id ('' for none).
      const hash = origin === 'token-without-tracking' ? '' : trackingHash(expectedTracking ?? 'order-other');
      return {
        amount: expectedAmount ?? '12500',
        trackingMatches: (t) => trackingHash(t) === hash || (hash === '' && t === undefined),
        identifiesPayment: hash !== '',
        origin: 'token',
      };
    }
  }
}

/** The rules, stated plainly. */
function oracle(status: string, origin: Origin, amount: Match, tracking: Match): Decision['kind'] | 'settle:' {
  const final = FINAL[status];
  const amountDiffers = amount === 'mismatch';
  // A token's tracking check: with a tracking id it matches only when signed for TRACKING; without
  // one (hash '') it matches only a payment without a tracking id, and ours has one.
  const trackingDiffers =
    origin === 'token-without-tracking'
      ? true
      : origin === 'token-with-tracking'
        ? tracking !== 'match'
        : origin === 'none'
          ? false
          : tracking === 'mismatch';
  const differs = origin !== 'none' && (amountDiffers || trackingDiffers);
  if (!differs) return final ? 'settle:' : 'pending';
  const unbacked = origin !== 'binding';
  // Unbacked expectations conclude something only when the tracking id pins the payment down.
  const pinned =
    (origin === 'caller' && tracking === 'match') || (origin === 'token-with-tracking' && tracking === 'match');
  if (unbacked && !pinned) return 'foreign';
  return final ? 'mismatch' : 'pending';
}

describe('decide(): what a verify answer means (every status x amount x tracking id x origin)', () => {
  const rows = STATUSES.flatMap((status) =>
    ORIGINS.flatMap((origin) =>
      MATCHES.flatMap((amount) => MATCHES.map((tracking) => ({ status, origin, amount, tracking }))),
    ),
  );

  it.each(rows)(
    '$status, amount $amount, tracking $tracking, origin $origin',
    ({ status, origin, amount, tracking }) => {
      const decision = decide(
        ID,
        { ok: true, verification: verification(status) },
        expectation(origin, amount, tracking),
      );
      const want = oracle(status, origin, amount, tracking);
      if (want === 'settle:') {
        expect(decision).toEqual({ kind: 'settle', outcome: FINAL[status].outcome, event: FINAL[status].event });
        return;
      }
      expect(decision.kind).toBe(want);
      if (decision.kind === 'mismatch') {
        // Recorded by the plugin itself: done; an unbacked expectation never marks a payment done.
        expect(decision.finish).toBe(origin === 'binding' ? 'done' : 'release');
        expect(decision.problems.length).toBeGreaterThan(0);
      }
    },
  );

  it('covers the whole table', () => {
    expect(rows).toHaveLength(STATUSES.length * ORIGINS.length * 3 * 3);
  });
});

describe('decide(): named cases', () => {
  const ok = (status: string, extra: Partial<VerifiedPayment> = {}) => ({
    ok: true as const,
    verification: { ...verification(status), ...extra },
  });
  const bound: OutcomeExpectation = { amount: AMOUNT, developerTrackingId: TRACKING, origin: 'binding' };

  it('SUCCESS matching what the plugin sent is paid', () => {
    expect(decide(ID, ok('SUCCESS'), bound)).toEqual({
      kind: 'settle',
      outcome: 'confirmed',
      event: 'payment.confirmed',
    });
  });

  it('SUCCESS for 1 millime of a 12 500 payment is a mismatch, never paid', () => {
    expect(decide(ID, ok('SUCCESS', { amount: '1' }), bound)).toMatchObject({ kind: 'mismatch', finish: 'done' });
  });

  it('amounts compare as millimes: leading zeros do not make a mismatch', () => {
    expect(decide(ID, ok('SUCCESS', { amount: '012500' }), bound).kind).toBe('settle');
  });

  it('lower-case "success" is not SUCCESS: pending, checked again later', () => {
    expect(decide(ID, ok('success'), bound)).toEqual({ kind: 'pending' });
  });

  it('an answer naming another payment_id is a mismatch, released (never paid, never marks this one done)', () => {
    const decision = decide(ID, ok('SUCCESS', { answeredPaymentId: 'pay_other' }), bound);
    expect(decision).toMatchObject({ kind: 'mismatch', finish: 'release' });
    expect((decision as { problems: string[] }).problems[0]).toContain('pay_other');
    // Even a pending answer about another payment says nothing of this one.
    expect(decide(ID, ok('PENDING', { answeredPaymentId: 'pay_other' }), bound)).toMatchObject({
      kind: 'mismatch',
      finish: 'release',
    });
  });

  it('an answer naming the payment asked about is judged as usual', () => {
    expect(decide(ID, ok('SUCCESS', { answeredPaymentId: ID }), bound).kind).toBe('settle');
  });

  it('without any expectation (nothing recorded, nothing passed) the status decides', () => {
    expect(decide(ID, ok('EXPIRED'))).toEqual({ kind: 'settle', outcome: 'expired', event: 'payment.expired' });
  });
});

describe('decide(): the verified currency (details.currency) against the expected one, TND by default', () => {
  const bound: OutcomeExpectation = { amount: AMOUNT, developerTrackingId: TRACKING, origin: 'binding' };
  const answer = (status: string, currency: unknown) => ({
    ok: true as const,
    verification: { ...verification(status), details: currency === undefined ? {} : { currency } },
  });
  const tokenPinned: OutcomeExpectation = {
    amount: AMOUNT,
    trackingMatches: (t) => t === TRACKING,
    identifiesPayment: true,
    origin: 'token',
  };
  const rows: Array<[string, string, unknown, OutcomeExpectation | undefined, string, ('done' | 'release')?]> = [
    ['788 (ISO 4217 numeric of TND), as the docs show it', 'SUCCESS', '788', bound, 'settle'],
    ['"TND"', 'SUCCESS', 'TND', bound, 'settle'],
    ['"tnd" (any case)', 'SUCCESS', 'tnd', bound, 'settle'],
    ['788 as a JSON number', 'SUCCESS', 788, bound, 'settle'],
    ['no currency sent: nothing to compare', 'SUCCESS', undefined, bound, 'settle'],
    ['USD (840) for a TND payment: mismatch, done', 'SUCCESS', '840', bound, 'mismatch', 'done'],
    ['"EUR": mismatch', 'SUCCESS', 'EUR', bound, 'mismatch', 'done'],
    ['an unreadable currency (an object): mismatch', 'SUCCESS', { code: 788 }, bound, 'mismatch', 'done'],
    ['an empty currency: mismatch', 'SUCCESS', '', bound, 'mismatch', 'done'],
    [
      'USD without any expectation: still a mismatch (TND is the default)',
      'SUCCESS',
      '840',
      undefined,
      'mismatch',
      'done',
    ],
    ['USD, the caller expected EUR: mismatch', 'SUCCESS', '840', { ...bound, currency: 'EUR' }, 'mismatch', 'done'],
    ['EUR, the caller expected EUR: paid', 'SUCCESS', 'EUR', { ...bound, currency: 'EUR' }, 'settle'],
    ['USD, a token pinning the payment: mismatch, released', 'SUCCESS', '840', tokenPinned, 'mismatch', 'release'],
    [
      'USD, failed: a mismatch too (never the outcome of another currency)',
      'FAILURE',
      '840',
      bound,
      'mismatch',
      'done',
    ],
    ['USD while PENDING: pending (nothing is settled yet)', 'PENDING', '840', bound, 'pending'],
  ];
  // Rows as objects: a tuple shorter than the callback's parameters would pass Jest's `done` in.
  const cases = rows.map(([name, status, currency, expected, kind, finish]) => ({
    name,
    status,
    currency,
    expected,
    kind,
    finish,
  }));
  it.each(cases)('$name', ({ status, currency, expected, kind, finish }) => {
    const decision = decide(ID, answer(status, currency), expected);
    expect(decision.kind).toBe(kind);
    if (decision.kind === 'mismatch') {
      expect(decision.finish).toBe(finish);
      expect(decision.problems.join('; ')).toMatch(/currency/);
    }
  });
});

describe('doneOutcomeOf(): a settled payment told from a fresh answer (its record unread)', () => {
  const bound: OutcomeExpectation = { amount: AMOUNT, developerTrackingId: TRACKING, origin: 'binding' };
  const rows: Array<{
    name: string;
    status: string;
    details: Record<string, unknown>;
    expected?: OutcomeExpectation;
    outcome: string;
  }> = [
    { name: 'SUCCESS as expected: confirmed', status: 'SUCCESS', details: {}, expected: bound, outcome: 'confirmed' },
    {
      name: 'SUCCESS in USD (840): a mismatch, never paid',
      status: 'SUCCESS',
      details: { currency: '840' },
      expected: bound,
      outcome: 'mismatch',
    },
    {
      name: 'SUCCESS in USD, nothing expected: a mismatch',
      status: 'SUCCESS',
      details: { currency: '840' },
      outcome: 'mismatch',
    },
    {
      name: 'SUCCESS for another amount: a mismatch',
      status: 'SUCCESS',
      details: {},
      expected: { ...bound, amount: '1' },
      outcome: 'mismatch',
    },
    { name: 'FAILURE: failed', status: 'FAILURE', details: {}, expected: bound, outcome: 'failed' },
    { name: 'EXPIRED: expired', status: 'EXPIRED', details: {}, expected: bound, outcome: 'expired' },
    { name: 'PENDING: pending', status: 'PENDING', details: {}, expected: bound, outcome: 'pending' },
  ];
  it.each(rows)('$name', ({ status, details, expected, outcome }) => {
    expect(doneOutcomeOf(ID, { ...verification(status), details }, expected)).toBe(outcome);
  });
});

describe('decide(): a verify call that failed', () => {
  const details = { operation: 'verifyPayment' as const, httpStatus: 404 };
  const token: OutcomeExpectation = { amount: AMOUNT, origin: 'token', trackingMatches: () => true };

  it('NOT_FOUND for a token without a binding: foreign (a replay with a made-up id), 401 not 503', () => {
    expect(decide(ID, { ok: false, error: new PaymentsApiError('NOT_FOUND', details) }, token)).toEqual({
      kind: 'foreign',
      problems: ['the service does not know this payment'],
    });
  });

  it('NOT_FOUND for a payment the plugin recorded: unverified (tried again later)', () => {
    expect(
      decide(
        ID,
        { ok: false, error: new PaymentsApiError('NOT_FOUND', details) },
        { amount: AMOUNT, origin: 'binding' },
      ),
    ).toEqual({ kind: 'unverified' });
  });

  it("429: every path pauses for the service's Retry-After, else 30 s", () => {
    const limited = (retryAfterSecs?: number) =>
      new PaymentsRateLimitedError({ operation: 'verifyPayment', httpStatus: 429, retryAfterSecs });
    expect(decide(ID, { ok: false, error: limited(7) })).toEqual({
      kind: 'unverified',
      retryAfterSecs: 7,
      rateLimitedSecs: 7,
    });
    expect(decide(ID, { ok: false, error: limited() })).toEqual({
      kind: 'unverified',
      retryAfterSecs: 30,
      rateLimitedSecs: 30,
    });
  });

  it('no answer at all (connection): unverified, Retry-After 5 s', () => {
    const error = new PaymentsConnectionError({
      operation: 'verifyPayment',
      code: 'CONNECTION_FAILED',
      mayHaveBeenProcessed: false,
      attempts: 3,
      reason: 'ECONNREFUSED',
    });
    expect(decide(ID, { ok: false, error })).toEqual({ kind: 'unverified', retryAfterSecs: 5 });
  });

  it('any other error: unverified, no pause', () => {
    expect(decide(ID, { ok: false, error: new PaymentsError('boom', 'API_ERROR') })).toEqual({ kind: 'unverified' });
  });
});

describe('decide(): zero false confirmations over random verify answers (property)', () => {
  const status = fc.oneof(
    fc.constantFrom(...STATUSES, 'Success', ' SUCCESS', 'SUCCESS '),
    fc.string({ maxLength: 12 }),
  );
  const amount = fc.oneof(
    fc.constantFrom(AMOUNT, '012500', '12500', '1', '0', '125000'),
    fc.stringMatching(/^[0-9]{1,15}$/),
  );
  const tracking = fc.option(fc.constantFrom(TRACKING, 'order-8', '', 'ORDER-7'), { nil: undefined });
  const answered = fc.option(fc.constantFrom(ID, 'pay_2', 'PAY_1', 'pay_1 '), { nil: undefined });
  const origin = fc.constantFrom<OutcomeExpectation['origin']>('binding', 'caller');

  it('confirms only SUCCESS, for the expected amount and tracking id, about the payment asked', () => {
    fc.assert(
      fc.property(status, amount, tracking, answered, origin, (s, a, t, named, o) => {
        const verified: VerifiedPayment = { paymentId: ID, status: s, amount: a };
        if (t !== undefined) verified.developerTrackingId = t;
        if (named !== undefined) verified.answeredPaymentId = named;
        const decision = decide(
          ID,
          { ok: true, verification: verified },
          { amount: AMOUNT, developerTrackingId: TRACKING, origin: o },
        );
        const confirmed = decision.kind === 'settle' && decision.outcome === 'confirmed';
        const genuine =
          s === 'SUCCESS' && BigInt(a) === BigInt(AMOUNT) && t === TRACKING && (named === undefined || named === ID);
        expect(confirmed).toBe(genuine);
      }),
      { numRuns: 2000 },
    );
  });
});
