import { describe, expect, it } from '@jest/globals';
import { CHECKOUT_RULES, mayReuse, planCheckout } from '../../lib/core/api/payments.checkout.js';
import { cancellationKey } from '../../lib/core/api/payments.cancellations.js';
import { checkoutKey, orderLedgerKey } from '../../lib/core/settlement/settlement.orders.js';
import {
  PaymentsApiError,
  PaymentsConnectionError,
  PaymentsValidationError,
  RefundNotAllowedError,
} from '../../lib/core/api/payments.errors.js';
import {
  MAX_REFUND_TRIES,
  orderVerdict,
  refundFailure,
  refundPlan,
  refundStart,
  refundStateAfter,
} from '../../lib/core/settlement/settlement.orders.js';
import { orderScreenOf } from '../../lib/core/settlement/settlement.orders.js';
import { captureRefusal } from '../../lib/core/api/payments.duplicates.js';
import type { OutcomeRecord } from '../../lib/core/store/store.types.js';
import type { OrderCheckout } from '../../lib/core/store/store.types.js';

// One order, one charge: the rules, each one pure function, as tables.

describe('orderVerdict: whether a successful payment confirms its order', () => {
  const A = { paymentId: 'pay_A', amount: '12500' };
  it.each([
    ['no tracking id: no order, confirmed as ever', 'pay_B', undefined, A, { kind: 'confirm' }],
    ['nobody settled the order yet', 'pay_B', 'order-1', undefined, { kind: 'confirm' }],
    ['the payment itself settled it (a retry of its own)', 'pay_A', 'order-1', A, { kind: 'confirm' }],
    ['another payment settled it: a duplicate naming it', 'pay_B', 'order-1', A, { kind: 'duplicate', settledBy: A }],
  ] as const)('%s', (_case, paymentId, trackingId, held, verdict) => {
    expect(orderVerdict(paymentId, trackingId, held)).toEqual(verdict);
  });
});

describe('orderScreenOf: how each outcome meets its order', () => {
  it.each([
    ['paid: settles the order, or is a duplicate', 'confirmed', 'settle'],
    ['held: a duplicate when another paid the order, never settles it', 'authorized', 'check'],
    ['declined: nothing charged', 'failed', 'none'],
    ['expired: nothing charged', 'expired', 'none'],
  ] as const)('%s', (_case, outcome, mode) => {
    expect(orderScreenOf(outcome)).toBe(mode);
  });
});

describe('captureRefusal: a hold whose capture would charge its order twice', () => {
  const record = (over: Partial<OutcomeRecord>): OutcomeRecord => ({
    paymentId: 'pay_B',
    outcome: 'authorized',
    status: 'PREAUTH_SUCCESS',
    source: 'webhook',
    handlers: 'succeeded',
    attempts: 1,
    amount: '12500',
    developerTrackingId: 'order-1',
    updatedAt: '2030-01-01T00:00:00.000Z',
    ...over,
  });
  const A = { paymentId: 'pay_A', amount: '12500' };
  it.each([
    ['nothing known: captured', undefined, undefined, false],
    ['authorized, order not paid: captured', record({}), undefined, false],
    [
      'authorized, the order settled by itself (a capture again): captured',
      record({}),
      { ...A, paymentId: 'pay_B' },
      false,
    ],
    ['recorded a duplicate: refused', record({ outcome: 'duplicate', settledBy: 'pay_A' }), A, true],
    [
      'recorded a duplicate, the order record gone: refused',
      record({ outcome: 'duplicate', settledBy: 'pay_A' }),
      undefined,
      true,
    ],
    ['authorized first, the order paid by another since: refused', record({}), A, true],
  ] as const)('%s', (_case, found, held, refused) => {
    const why = captureRefusal('pay_B', found, held);
    expect(why !== undefined).toBe(refused);
    if (refused) expect(why).toContain('already paid by payment pay_A');
  });
});

describe('refundPlan: refunding a duplicate once', () => {
  const recorded = { refundId: 'ref_1', amount: '12500', status: 'success', refundedAt: '2030-01-01T00:00:00.000Z' };
  it.each([
    ['off, nothing recorded', false, undefined, 'none'],
    ['on, nothing recorded: call the refund', true, undefined, 'call'],
    ['on, refunded by an earlier attempt: never again', true, { refund: recorded, refundState: 'refunded' }, 'settled'],
    ['on, refunded by hand (only the refund recorded): never again', true, { refund: recorded }, 'settled'],
    ['off, yet recorded (turned off since): still reported', false, { refund: recorded }, 'settled'],
    [
      'not wanted (a held pre-authorization), a refund recorded by hand: reported',
      false,
      { refund: recorded },
      'settled',
    ],
    ['refused: never again', true, { refundState: 'refused', refundTries: 1 }, 'settled'],
    ['answer lost: never again', true, { refundState: 'unknown', refundTries: 1 }, 'settled'],
    ['not sent three times: failed, never again', true, { refundState: 'failed', refundTries: 3 }, 'settled'],
    ['not sent once: call again', true, { refundState: 'retry', refundTries: 1 }, 'call'],
    ['not sent twice: call a third time', true, { refundState: 'retry', refundTries: 2 }, 'call'],
    ['retry, yet three calls sent: never again', true, { refundState: 'retry', refundTries: 3 }, 'settled'],
    ['retry, turned off since: never again', false, { refundState: 'retry', refundTries: 1 }, 'settled'],
    [
      'sent by an attempt that stopped before its answer: unknown',
      true,
      { refundState: 'sending', refundTries: 1 },
      'unknown',
    ],
  ] as const)('%s', (_case, wanted, found, plan) => {
    expect(refundPlan(wanted, found)).toBe(plan);
  });
});

describe("refundStart: whether the payment's refund record lets a call be sent", () => {
  it.each([
    ['no record: send', undefined, 'send'],
    ['on its way, or its attempt stopped before the answer: never again', { state: 'sending', tries: 1 }, 'held'],
    ['answer lost: never again', { state: 'unknown', tries: 1 }, 'held'],
    ['refunded: never again', { state: 'refunded', tries: 1 }, 'held'],
    ['not sent once: send', { state: 'retry', tries: 1 }, 'send'],
    ['not sent twice: send a third', { state: 'retry', tries: 2 }, 'send'],
    ['not sent three times: no more calls', { state: 'retry', tries: 3 }, 'held'],
    ['refused (nothing refunded): a later ask may send it', { state: 'refused', tries: 1 }, 'send'],
    ['refused three times: no more calls', { state: 'refused', tries: 3 }, 'held'],
    ['failed: never again', { state: 'failed', tries: 3 }, 'held'],
  ] as const)('%s', (_case, record, start) => {
    expect(refundStart(record)).toBe(start);
  });
});

describe('refundFailure: what a failed refund call says', () => {
  const api = (status: number, code = 'API_ERROR') =>
    new PaymentsApiError(code, { operation: 'refundPayment', httpStatus: status });
  const connection = (mayHaveBeenProcessed: boolean) =>
    new PaymentsConnectionError({
      operation: 'refundPayment',
      code: mayHaveBeenProcessed ? 'TIMEOUT' : 'CONNECTION_FAILED',
      mayHaveBeenProcessed,
      attempts: 1,
      reason: mayHaveBeenProcessed ? 'timeout' : 'connection refused',
    });
  it.each([
    [
      'refused by the service (REFUND_NOT_ALLOWED)',
      new RefundNotAllowedError({ operation: 'refundPayment', httpStatus: 400 }),
      'refused',
    ],
    ['another 4xx', api(404), 'refused'],
    ['bad input', new PaymentsValidationError([{ field: 'paymentId', messages: ['bad'] }], 'x'), 'refused'],
    ['429: turned away unprocessed', api(429), 'not-sent'],
    ['nothing sent (connection refused)', connection(false), 'not-sent'],
    ['5xx: may have refunded', api(500), 'unknown'],
    ['502 from a proxy that lost the answer', api(502), 'unknown'],
    ['an unreadable 200', api(200, 'INVALID_RESPONSE'), 'unknown'],
    ['no answer (timeout, may have been processed)', connection(true), 'unknown'],
    ['not an error of the plugin', new Error('socket hang up'), 'unknown'],
  ])('%s', (_case, error, verdict) => {
    expect(refundFailure(error)).toBe(verdict);
  });
});

describe('refundStateAfter: where a refund stands after a failed call', () => {
  it.each([
    ['refused', 'refused', 1, 'refused'],
    ['answer lost on the first call', 'unknown', 1, 'unknown'],
    ['answer lost on the third call', 'unknown', 3, 'unknown'],
    ['not sent, first call', 'not-sent', 1, 'retry'],
    ['not sent, second call', 'not-sent', 2, 'retry'],
    ['not sent, third call: failed', 'not-sent', MAX_REFUND_TRIES, 'failed'],
  ] as const)('%s', (_case, failure, tries, state) => {
    expect(refundStateAfter(failure, tries)).toBe(state);
  });
});

describe('planCheckout: reusing an order’s open payment', () => {
  const now = Date.parse('2030-01-01T00:00:00.000Z');
  const open = (over: Partial<OrderCheckout> = {}): OrderCheckout => ({
    paymentId: 'pay_1',
    link: 'https://pay.example/1',
    amount: '12500',
    fingerprint: 'f',
    sessionEndsAt: new Date(now + 20 * 60_000).toISOString(),
    ...over,
  });
  const ask = { amount: '12500', fingerprint: 'f' };
  it.each([
    ['no open payment: open one', undefined, ask, { kind: 'open', superseded: [] }],
    ['same amount and request, session open: reuse it', open(), ask, { kind: 'reuse', checkout: open() }],
    [
      'changed amount: a new one, the open one superseded',
      open(),
      { ...ask, amount: '9000' },
      { kind: 'open', superseded: ['pay_1'] },
    ],
    [
      'changed links: a new one, superseded',
      open(),
      { ...ask, fingerprint: 'g' },
      { kind: 'open', superseded: ['pay_1'] },
    ],
    [
      'earlier ones kept, newest first',
      open({ superseded: ['pay_0'] }),
      { ...ask, amount: '1' },
      { kind: 'open', superseded: ['pay_1', 'pay_0'] },
    ],
    [
      'session about to end: a new one (not superseded)',
      open({ sessionEndsAt: new Date(now + CHECKOUT_RULES.reuseMarginMs - 1).toISOString() }),
      ask,
      { kind: 'open', superseded: [] },
    ],
    ['session end unreadable: a new one', open({ sessionEndsAt: 'soon' }), ask, { kind: 'open', superseded: [] }],
  ] as const)('%s', (_case, found, request, plan) => {
    expect(planCheckout(found, request, now)).toEqual(plan);
  });

  it.each([
    ['declined (failed): a new one at once', { outcome: 'failed', cancelled: false }],
    ['expired: a new one at once', { outcome: 'expired', cancelled: false }],
    ['cancelled pre-authorization: a new one at once', { outcome: 'authorized', cancelled: true }],
    ['a mismatch: a new one', { outcome: 'mismatch', cancelled: false }],
  ] as const)('%s, earlier ones kept, the closed one not superseded', (_case, standing) => {
    expect(planCheckout(open({ superseded: ['pay_0'] }), ask, now, standing)).toEqual({
      kind: 'open',
      superseded: ['pay_0'],
    });
  });

  it('keeps at most maxSuperseded earlier payments', () => {
    const many = Array.from({ length: 30 }, (_, i) => `pay_old_${i}`);
    const plan = planCheckout(open({ superseded: many }), { ...ask, amount: '1' }, now);
    expect(plan.kind === 'open' && plan.superseded.length).toBe(CHECKOUT_RULES.maxSuperseded);
  });

  it.each([
    [undefined, undefined, undefined],
    [undefined, 'order-1', 'order:order-1'],
    ['attempt-7', 'order-1', 'key:attempt-7'],
    ['attempt-7', undefined, 'key:attempt-7'],
  ])('checkoutKey(%s, %s) = %s', (key, tracking, expected) => {
    expect(checkoutKey(key, tracking)).toBe(expected);
  });
});

describe('mayReuse: whether an open payment may answer its order’s next checkout', () => {
  it.each([
    ['nothing learnt yet (no outcome record)', undefined, false, true],
    ['checked and still pending', 'pending', false, true],
    ['declined (FAILURE, SYSTEM_FAILURE)', 'failed', false, false],
    ['expired (EXPIRED)', 'expired', false, false],
    ['answered unlike what was sent (mismatch)', 'mismatch', false, false],
    ['paid: its link shows it paid, a new one would be a second charge', 'confirmed', false, true],
    ['held (pre-authorized): likewise', 'authorized', false, true],
    ['a duplicate of the paid order: likewise', 'duplicate', false, true],
    ['held, then cancelled (cancelPayment recorded)', 'authorized', true, false],
    ['cancelled before its outcome was learnt', undefined, true, false],
    ['cancelled and checked pending', 'pending', true, false],
  ] as const)('%s', (_case, outcome, cancelled, reusable) => {
    expect(mayReuse({ outcome, cancelled })).toBe(reusable);
  });

  it('keeps cancellation notes apart from every order of every registration', () => {
    // A tracking id cannot hold a control character; registration names are letters, digits, - and _.
    expect(cancellationKey(undefined, 'pay_1')).not.toBe(orderLedgerKey(undefined, 'cancelled/pay_1'));
    expect(cancellationKey('shop', 'pay_1')).not.toBe(cancellationKey(undefined, 'pay_1'));
    expect(cancellationKey(undefined, 'pay_1').startsWith('\u001f')).toBe(true);
  });
});
