/**
 * What a path's expectation may put in the re-check queue (queuedExpectation): an entry is judged
 * later as the plugin's own record, so it holds the payment's tracking id, or none when the payment
 * has none, never "no tracking id" for a payment whose tracking id only a token's hash knows.
 */
import { describe, expect, it } from '@jest/globals';
import { queuedExpectation } from '../../lib/core/settlement/settlement.rechecks.js';
import type { OutcomeExpectation } from '../../lib/core/settlement/settlement.decision.js';
import { trackingHash } from '../../lib/core/webhook/webhook.token.js';

/** A token's expectation, as the webhook builds it for a token without a binding. */
function token(trackingId: string | undefined): OutcomeExpectation {
  const hash = trackingHash(trackingId);
  return {
    amount: '4200',
    trackingMatches: (t) => trackingHash(t) === hash,
    identifiesPayment: hash !== '',
    origin: 'token',
  };
}

const rows: Array<{
  name: string;
  expected: OutcomeExpectation | undefined;
  verified?: { developerTrackingId?: string };
  queued: Pick<OutcomeExpectation, 'amount' | 'developerTrackingId'> | undefined;
}> = [
  { name: 'nothing expected: nothing new', expected: undefined, queued: undefined },
  {
    name: "the plugin's record: as it is",
    expected: { amount: '4200', developerTrackingId: 'order-1', origin: 'binding' },
    queued: { amount: '4200', developerTrackingId: 'order-1' },
  },
  {
    name: 'a token with a tracking id, answer matching it: the verified tracking id is kept',
    expected: token('order-1'),
    verified: { developerTrackingId: 'order-1' },
    queued: { amount: '4200', developerTrackingId: 'order-1' },
  },
  {
    name: 'a token with a tracking id, no answer (verify failed): nothing new (it cannot be checked)',
    expected: token('order-1'),
    queued: undefined,
  },
  {
    name: 'a token with a tracking id, answer naming another: nothing new',
    expected: token('order-1'),
    verified: { developerTrackingId: 'order-2' },
    queued: undefined,
  },
  {
    name: 'a token with a tracking id, answer without one: nothing new',
    expected: token('order-1'),
    verified: {},
    queued: undefined,
  },
  {
    name: 'a token without a tracking id, no answer: the amount (the payment has none)',
    expected: token(undefined),
    queued: { amount: '4200', developerTrackingId: undefined },
  },
  {
    name: 'a token without a tracking id, answer without one: the amount',
    expected: token(undefined),
    verified: {},
    queued: { amount: '4200', developerTrackingId: undefined },
  },
  {
    name: 'a token without a tracking id, answer with one: nothing new',
    expected: token(undefined),
    verified: { developerTrackingId: 'order-2' },
    queued: undefined,
  },
];

describe('queuedExpectation(): what a path may queue for a re-check', () => {
  it.each(rows)('$name', ({ expected, verified, queued }) => {
    const got = queuedExpectation(expected, verified);
    if (queued === undefined) {
      expect(got).toBeUndefined();
      return;
    }
    expect({ amount: got?.amount, developerTrackingId: got?.developerTrackingId }).toEqual(queued);
  });
});
