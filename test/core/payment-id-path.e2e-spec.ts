import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { pathSegmentId } from '../../lib/core/api/wire.values.js';
import { PaymentsValidationError } from '../../lib/core/api/payments.errors.js';
import { PaymentsClient } from '../../lib/core/client/payments.client.js';
import { FakeService } from '../support/fake-service.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';

// A payment id goes into the verify request's path: an id made of dots is a dot segment that URL
// resolution removes (`..` requested the API's root with the merchant's credentials), and a
// slash, a backslash or a percent-escape may be decoded into the path by a server or a proxy.

const PATH_CHANGING = [
  '.',
  '..',
  '...',
  ' .. ',
  '%2e%2e',
  '%2E%2e',
  '.%2e',
  'a/b',
  '../verify_payment/x',
  'a\\b',
  '..\\x',
  'a?b',
  'a#b',
  '%2f',
  'x%2Fy',
];

describe('pathSegmentId: the rule of ids that go into a request path', () => {
  it.each([
    ['pay_123', undefined],
    ['7b0c1d2e-aaaa-bbbb-cccc-0123456789ab', undefined],
    ['a.b', undefined],
    ['.hidden-but-not-only-dots', undefined],
    ['a b:c', undefined],
    ['100%', undefined],
    ['', 'must be a non-empty string'],
    ['.', 'must not be only dots (a dot segment would change the request path)'],
    ['..', 'must not be only dots (a dot segment would change the request path)'],
    [' .. ', 'must not be only dots (a dot segment would change the request path)'],
    ['a/b', 'must not contain "/", "\\", "?" or "#" (it would change the request path)'],
    ['a\\b', 'must not contain "/", "\\", "?" or "#" (it would change the request path)'],
    ['a?b', 'must not contain "/", "\\", "?" or "#" (it would change the request path)'],
    ['a#b', 'must not contain "/", "\\", "?" or "#" (it would change the request path)'],
    ['%2e%2e', 'must not contain percent-escapes such as %2e or %2f (a server may decode them into the path)'],
    ['x%2Fy', 'must not contain percent-escapes such as %2e or %2f (a server may decode them into the path)'],
  ])('%j -> %j', (id, problem) => {
    expect(pathSegmentId(id)).toBe(problem);
  });
});

describe('a path-changing payment id is refused before any request (loopback service)', () => {
  let fake: FakeService;
  let client: PaymentsClient;

  beforeAll(async () => {
    fake = await FakeService.start();
    fake.always('/api/v2/', { status: 200, body: { status: 'success', result: {} } });
    client = new PaymentsClient({
      publicKey: 'pk_ids',
      privateKey: 'sk_ids_0123456789_secret',
      baseUrl: fake.url,
      maxRetries: 0,
      reconciliation: { enabled: false },
      successLink: 'https://shop.example/ok',
      failLink: 'https://shop.example/ko',
    });
  });
  afterAll(async () => {
    await client.close();
    await fake.close();
  });

  it.each(PATH_CHANGING)(
    '%j: verify, capture, refund and cancel throw PaymentsValidationError and send nothing',
    async (id) => {
      const before = fake.requests.length;
      for (const call of [
        () => client.verifyPayment(id),
        () => client.capturePayment(id),
        () => client.refundPayment(id),
        () => client.cancelPayment(id),
      ]) {
        const error = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(PaymentsValidationError);
        expect((error as PaymentsValidationError).message).toContain('paymentId');
      }
      expect(fake.requests.slice(before)).toEqual([]);
    },
  );

  it('an ordinary id still reaches its own path', async () => {
    fake.reply(verifyPath('pay.1'), { status: 200, body: verifyAnswer({ status: 'PENDING' }) });
    await client.verifyPayment('pay.1');
    expect(fake.requests[fake.requests.length - 1].path).toBe('/api/v2/verify_payment/pay.1');
  });
});
