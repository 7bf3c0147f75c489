import { describe, expect, it } from '@jest/globals';
import { checkPaymentInput, PAYMENT_FIELDS, toPaymentWire } from '../../lib/core/payment.fields.js';
import type { GeneratePaymentInput } from '../../lib/core/payments.types.js';
import { resolvePaymentsOptions } from '../../lib/core/payments.options.js';

const BASE = { amount: '12500', successLink: 'https://shop.example/ok', failLink: 'https://shop.example/ko' };
const messagesFor = (input: Record<string, unknown>, field: string): string[] =>
  checkPaymentInput(input)
    .filter((e) => e.field === field)
    .flatMap((e) => e.messages);

// One row per field and rule: [field, value, accepted?, part of the message when refused].
const ROWS: Array<[string, unknown, boolean, string]> = [
  ['amount', '12500', true, ''],
  ['amount', 12500, true, ''],
  ['amount', '0012500', true, ''],
  ['amount', '0', false, 'positive whole number'],
  ['amount', -5, false, 'positive whole number'],
  ['amount', 12.5, false, "toMillimes('12.5')"],
  ['amount', '12.5', false, "toMillimes('12.5')"],
  ['amount', '1e5', false, 'positive whole number'],
  ['amount', '9'.repeat(16), false, 'at most 15 digits'],
  ['amount', '9'.repeat(400), false, 'at most 15 digits'],
  ['amount', '١٢٣', false, 'positive whole number'],
  ['successLink', 'http://localhost:3000/ok', true, ''],
  ['successLink', 'http://shop/ok', true, ''],
  ['successLink', 'javascript:alert(1)', false, 'absolute http(s) URL'],
  ['successLink', 'ftp://shop.example/ok', false, 'absolute http(s) URL'],
  ['successLink', '/relative', false, 'absolute http(s) URL'],
  ['successLink', 'https://user:pass@shop.example/ok', false, 'user name or password'],
  ['failLink', 'https://shop.example/' + 'a'.repeat(2100), false, 'absolute http(s) URL'],
  ['webhook', 'https://shop.example/hook', true, ''],
  ['webhook', 'not a url', false, 'absolute http(s) URL'],
  ['imageUrl', 'https://cdn.example/logo.png', true, ''],
  ['imageUrl', 42, false, 'absolute http(s) URL'],
  ['developerTrackingId', 'order-42', true, ''],
  ['developerTrackingId', 'x'.repeat(256), true, ''],
  ['developerTrackingId', 'x'.repeat(257), false, 'at most 256'],
  ['developerTrackingId', 'x'.repeat(1_000_000), false, 'at most 256'],
  ['developerTrackingId', 'a\r\nb', false, 'control characters'],
  ['developerTrackingId', '   ', false, 'non-empty'],
  ['developerTrackingId', 7, false, 'non-empty string'],
  ['sessionTimeoutSecs', 600, true, ''],
  ['sessionTimeoutSecs', 0, false, 'positive integer'],
  ['sessionTimeoutSecs', 1e21, false, 'positive integer'],
  ['sessionTimeoutSecs', '600', false, 'positive integer'],
  ['acceptCard', true, true, ''],
  ['acceptCard', 'yes', false, 'boolean'],
  ['preAuthorization', true, true, ''],
  ['preAuthorization', 1, false, 'boolean'],
  ['clientId', 'customer-7', true, ''],
  ['clientId', '\ud800', false, 'well-formed Unicode'],
  ['destinations', [{ merchantId: 'm-1', amount: '5000' }], true, ''],
  [
    'destinations',
    [
      { merchantId: 'm-1', amount: 5000 },
      { merchantId: 'm-2', amount: '7500' },
    ],
    true,
    '',
  ],
  ['destinations', [], false, '1 to 32'],
  ['destinations', [{ merchantId: '', amount: '5000' }], false, 'merchantId'],
  ['destinations', [{ merchantId: 'm-1', amount: '5.5' }], false, 'amount'],
  ['destinations', [{ merchantId: 'm-1', amount: '5000', extra: 1 }], false, 'unknown field'],
  ['destinations', [{ merchantId: 'm-1', amount: '12501' }], false, 'more than amount'],
];

describe('the field table of generate_payment', () => {
  it.each(ROWS)('%s = %j: accepted %s', (field, value, accepted, message) => {
    const messages = messagesFor({ ...BASE, [field]: value }, field);
    if (accepted) expect(messages).toEqual([]);
    else expect(messages.join(' ')).toContain(message);
  });

  it('declares every field of GeneratePaymentInput once, with a distinct wire name', () => {
    const names = PAYMENT_FIELDS.map((f) => f.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(PAYMENT_FIELDS.map((f) => f.wire)).size).toBe(names.length);
    expect(names.sort()).toEqual(
      [
        'acceptCard',
        'amount',
        'clientId',
        'destinations',
        'developerTrackingId',
        'failLink',
        'imageUrl',
        'preAuthorization',
        'sessionTimeoutSecs',
        'successLink',
        'webhook',
      ].sort(),
    );
  });

  it('requires amount, successLink and failLink, and names the module option for the links', () => {
    const errors = checkPaymentInput({});
    expect(errors.map((e) => e.field).sort()).toEqual(['amount', 'failLink', 'successLink']);
    expect(errors.find((e) => e.field === 'successLink')?.messages[0]).toContain("module's successLink option");
  });

  it('refuses unknown fields, including __proto__ and constructor, without echoing values', () => {
    const input = JSON.parse(
      '{"amount":"1","successLink":"https://a.example","failLink":"https://a.example","__proto__":{"x":1},"constructor":"c","secretish":"sk_do_not_echo"}',
    );
    const errors = checkPaymentInput(input);
    expect(errors.map((e) => e.field).sort()).toEqual(['__proto__', 'constructor', 'secretish']);
    expect(JSON.stringify(errors)).not.toContain('sk_do_not_echo');
  });

  it('treats null and undefined as unset', () => {
    expect(checkPaymentInput({ ...BASE, webhook: null, imageUrl: undefined })).toEqual([]);
  });

  it('maps to the wire: snake_case, amount as digits, unset fields omitted, destinations as integers', () => {
    const input: GeneratePaymentInput = {
      ...BASE,
      amount: 12500,
      developerTrackingId: 'order-1',
      sessionTimeoutSecs: 900,
      acceptCard: false,
      clientId: 'c-1',
      destinations: [{ merchantId: 'm-1', amount: '2500' }],
    };
    expect(toPaymentWire(input, 'pre_authorization')).toStrictEqual({
      amount: '12500',
      success_link: BASE.successLink,
      fail_link: BASE.failLink,
      developer_tracking_id: 'order-1',
      session_timeout_secs: 900,
      accept_card: false,
      client_id: 'c-1',
      destination: [{ amount: 2500, destination: 'm-1' }],
    });
  });

  it.each([
    ['pre_authorization', { pre_authorization: true }],
    ['pre_auth', { pre_auth: true }],
    ['both', { pre_authorization: true, pre_auth: true }],
  ] as const)('sends the pre-authorization flag as %s', (flag, expected) => {
    expect(toPaymentWire({ ...BASE, preAuthorization: true }, flag)).toMatchObject(expected);
    const wire = toPaymentWire({ ...BASE, preAuthorization: true }, flag);
    expect(
      Object.keys(wire)
        .filter((k) => k.startsWith('pre_'))
        .sort(),
    ).toEqual(Object.keys(expected).sort());
  });

  it('gives the options that default fields the fields own rules', () => {
    expect(() =>
      resolvePaymentsOptions({ publicKey: 'pk', privateKey: 'sk', baseUrl: 'http://payments:8080', successLink: 'javascript:x', sessionTimeoutSecs: -1 }),
    ).toThrow(/successLink \(is not an absolute http\(s\) URL\).*sessionTimeoutSecs \(must be a positive integer\)/);
    const resolved = resolvePaymentsOptions({
      publicKey: 'pk',
      privateKey: 'sk',
      baseUrl: 'http://payments:8080',
      acceptCard: true,
      imageUrl: 'https://cdn.example/i.png',
    });
    expect(resolved.defaults).toStrictEqual({ acceptCard: true, imageUrl: 'https://cdn.example/i.png' });
  });

  it('refuses a baseUrl with credentials and says what is wrong with a malformed one', () => {
    expect(() => resolvePaymentsOptions({ publicKey: 'pk', privateKey: 'sk', baseUrl: 'http://user:pass@pay.example' })).toThrow(
      /baseUrl \(must not contain a user name or password/,
    );
    expect(() => resolvePaymentsOptions({ publicKey: 'pk', privateKey: 'sk', baseUrl: 'pay.example' })).toThrow(/baseUrl \(is not an absolute http\(s\) URL\)/);
  });
});
