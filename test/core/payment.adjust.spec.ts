// The one rule for a platform's per-order request hook: which fields it may set, and how.
import { ADJUSTABLE_PAYMENT_FIELDS, adjustedPaymentRequest } from '../../lib/core/api/payment.adjust.js';
import type { GeneratePaymentInput } from '../../lib/core/api/payment.fields.js';

describe('adjustedPaymentRequest', () => {
  const request: GeneratePaymentInput = {
    amount: '12500',
    developerTrackingId: 'ORDER1',
    successLink: 'https://shop.tn/ok',
    preAuthorization: true,
  };

  it.each([
    ['nothing returned', undefined, request],
    ['an empty object', {}, request],
    [
      'return URLs',
      { successLink: 'https://shop.tn/ok?o=1', failLink: 'https://shop.tn/ko?o=1' },
      { ...request, successLink: 'https://shop.tn/ok?o=1', failLink: 'https://shop.tn/ko?o=1' },
    ],
    ['a field set to undefined keeps the plugin’s', { successLink: undefined }, request],
    [
      'the session, the card form and the image',
      { sessionTimeoutSecs: 900, acceptCard: true, imageUrl: 'https://shop.tn/logo.png' },
      { ...request, sessionTimeoutSecs: 900, acceptCard: true, imageUrl: 'https://shop.tn/logo.png' },
    ],
  ])('%s', (_name, adjustments, expected) => {
    expect(adjustedPaymentRequest(request, adjustments, 'paymentRequest')).toEqual(expected);
  });

  it.each([['amount'], ['developerTrackingId'], ['preAuthorization'], ['webhook'], ['clientId'], ['description']])(
    'refuses %s, naming it and not its value',
    (field) => {
      const call = () => adjustedPaymentRequest(request, { [field]: 'secret-looking-value' }, 'paymentRequest');
      expect(call).toThrow(
        new RegExp(`paymentRequest may set ${ADJUSTABLE_PAYMENT_FIELDS.join(', ')} only; it returned ${field}$`),
      );
      expect(call).not.toThrow(/secret-looking-value/);
    },
  );

  it('refuses a value that is not an object, and never changes the request it was given', () => {
    expect(() => adjustedPaymentRequest(request, 'x' as never, 'paymentRequest')).toThrow(/must return an object/);
    const copy = { ...request };
    adjustedPaymentRequest(request, { successLink: 'https://shop.tn/other' }, 'paymentRequest');
    expect(request).toEqual(copy);
  });
});
