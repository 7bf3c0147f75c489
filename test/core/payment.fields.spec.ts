import { describe, expect, it } from '@jest/globals';
import {
  checkPaymentInput,
  OPTION_DEFAULTED_FIELDS,
  PAYMENT_FIELDS,
  toPaymentWire,
  type PaymentFieldName,
} from '../../lib/core/api/payment.fields.js';
import type { GeneratePaymentInput } from '../../lib/core/api/payments.types.js';
import { PAYMENTS_DEFAULTS, type PaymentsOptions } from '../../lib/core/client/payments.options.js';
import { resolvePaymentsOptions } from '../../lib/core/client/payments.resolver.js';
import { PAYMENTS_ENV, paymentsOptionsFromConfig } from '../../lib/nest/payments.config.js';

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
  ['amount', '999999999999999', true, ''],
  ['amount', '000999999999999999', true, ''],
  ['amount', Number.MAX_SAFE_INTEGER, false, 'at most 15 digits'],
  ['amount', '-5', false, 'positive whole number'],
  ['amount', '+5', false, 'positive whole number'],
  ['amount', '', false, 'positive whole number'],
  ['amount', ' 12', false, 'positive whole number'],
  ['amount', 1.5, false, "toMillimes('1.5')"],
  ['amount', 0, false, 'positive whole number'],
  ['amount', -1, false, 'positive whole number'],
  ['amount', Number.MAX_SAFE_INTEGER + 2, false, 'at most 15 digits'],
  ['amount', 1e21, false, 'at most 15 digits'],
  ['amount', NaN, false, 'positive whole number'],
  ['amount', {}, false, 'positive whole number'],
  ['amount', null, false, 'is required'],
  ['amount', undefined, false, 'is required'],
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
    const names = Object.keys(PAYMENT_FIELDS);
    expect(new Set(Object.values(PAYMENT_FIELDS).map((f) => f.wire)).size).toBe(names.length);
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
      resolvePaymentsOptions({
        publicKey: 'pk',
        privateKey: 'sk',
        baseUrl: 'http://payments:8080',
        successLink: 'javascript:x',
        sessionTimeoutSecs: -1,
      }),
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
    expect(() =>
      resolvePaymentsOptions({ publicKey: 'pk', privateKey: 'sk', baseUrl: 'http://user:pass@pay.example' }),
    ).toThrow(/baseUrl \(must not contain a user name or password/);
    expect(() => resolvePaymentsOptions({ publicKey: 'pk', privateKey: 'sk', baseUrl: 'pay.example' })).toThrow(
      /baseUrl \(is not an absolute http\(s\) URL\)/,
    );
  });
});

describe('what is derived from the table', () => {
  // The public names these must keep (docs/configuration.md, operators' deployment files): written out here.
  const VARIABLES: Record<string, string> = {
    successLink: 'PAYMENTS_SUCCESS_LINK',
    failLink: 'PAYMENTS_FAIL_LINK',
    acceptCard: 'PAYMENTS_ACCEPT_CARD',
    sessionTimeoutSecs: 'PAYMENTS_SESSION_TIMEOUT_SECS',
    imageUrl: 'PAYMENTS_IMAGE_URL',
  };

  it('types: amount is required, the rest optional, each with its kind (checked by the compiler)', () => {
    const minimal: GeneratePaymentInput = { amount: 1 };
    // @ts-expect-error amount is the one field the type requires
    const noAmount: GeneratePaymentInput = { successLink: BASE.successLink };
    // @ts-expect-error sessionTimeoutSecs is a positiveInteger: a number
    const badKind: GeneratePaymentInput = { amount: '1', sessionTimeoutSecs: '900' };
    // @ts-expect-error a field that is not in the table
    const unknown: GeneratePaymentInput = { amount: '1', sucessLink: BASE.successLink };
    const options: PaymentsOptions = {
      publicKey: 'pk',
      privateKey: 'sk',
      baseUrl: 'http://payments',
      ...VALID_DEFAULTS,
    };
    const badOption: PaymentsOptions = {
      publicKey: 'pk',
      privateKey: 'sk',
      baseUrl: 'http://payments',
      // @ts-expect-error the options that default fields take the fields' own types
      acceptCard: 'yes',
    };
    const notAnOption: PaymentsOptions = {
      publicKey: 'pk',
      privateKey: 'sk',
      baseUrl: 'http://payments',
      // @ts-expect-error a field that no option defaults
      clientId: 'c',
    };
    expect([minimal, noAmount, badKind, unknown, options, badOption, notAnOption]).toHaveLength(7);
  });

  it('the options that default fields are exactly the table rows marked fromOptions, each with its variable', () => {
    expect([...OPTION_DEFAULTED_FIELDS].sort()).toEqual(Object.keys(VARIABLES).sort());
    for (const name of OPTION_DEFAULTED_FIELDS) expect(PAYMENTS_ENV[name]).toBe(VARIABLES[name]);
  });

  it('reads each field default from its variable, by kind, and names the variable when it is invalid', () => {
    const env: Record<string, string> = {
      PAYMENTS_PUBLIC_KEY: 'pk',
      PAYMENTS_PRIVATE_KEY: 'sk',
      PAYMENTS_BASE_URL: 'http://payments:8080',
      PAYMENTS_SUCCESS_LINK: 'https://shop.example/ok',
      PAYMENTS_FAIL_LINK: 'https://shop.example/ko',
      PAYMENTS_ACCEPT_CARD: '1',
      PAYMENTS_SESSION_TIMEOUT_SECS: '900',
      PAYMENTS_IMAGE_URL: 'https://cdn.example/i.png',
    };
    const options = paymentsOptionsFromConfig({ get: (key) => env[key] });
    expect(options).toMatchObject({ ...VALID_DEFAULTS, acceptCard: true, sessionTimeoutSecs: 900 });
    expect(resolvePaymentsOptions(options).defaults).toStrictEqual({
      ...VALID_DEFAULTS,
      acceptCard: true,
      sessionTimeoutSecs: 900,
    });

    const bad: Record<string, string> = {
      ...env,
      PAYMENTS_ACCEPT_CARD: 'maybe',
      PAYMENTS_SESSION_TIMEOUT_SECS: '15m',
      PAYMENTS_IMAGE_URL: 'logo.png',
    };
    expect(() => paymentsOptionsFromConfig({ get: (key) => bad[key] })).toThrow(
      'Invalid payments options from the environment: ' +
        'PAYMENTS_SESSION_TIMEOUT_SECS (sessionTimeoutSecs) (must be a positive integer), PAYMENTS_ACCEPT_CARD (acceptCard) (must be a boolean), ' +
        'PAYMENTS_IMAGE_URL (imageUrl) (is not an absolute http(s) URL)',
    );
  });

  it("the service's documented defaults live in the table (1200 s session, no card payments)", () => {
    expect(PAYMENT_FIELDS.sessionTimeoutSecs.serviceDefault).toBe(1200);
    expect(PAYMENT_FIELDS.acceptCard.serviceDefault).toBe(false);
    expect(PAYMENTS_DEFAULTS.serviceSessionTimeoutSecs).toBe(1200);
    const withDefault = (Object.keys(PAYMENT_FIELDS) as PaymentFieldName[]).filter(
      (name) => PAYMENT_FIELDS[name].serviceDefault !== undefined,
    );
    expect(withDefault.sort()).toEqual(['acceptCard', 'sessionTimeoutSecs']);
  });

  it('other options use the same rules and messages as the fields', () => {
    const base = { publicKey: 'pk', privateKey: 'sk', baseUrl: 'http://payments:8080' };
    const messages = (options: Record<string, unknown>) => {
      try {
        resolvePaymentsOptions({ ...base, ...options });
        return [];
      } catch (error) {
        return (error as { fields: Array<{ field: string; messages: string[] }> }).fields.map(
          (f) => `${f.field}: ${f.messages.join()}`,
        );
      }
    };
    expect(
      messages({ timeoutMs: 1.5, outcomeRecordTtlSecs: 0, reconciliation: { intervalSecs: '60', enabled: 'yes' } }),
    ).toEqual([
      'timeoutMs: must be a positive integer',
      'outcomeRecordTtlSecs: must be a positive integer',
      'reconciliation.enabled: must be a boolean',
      'reconciliation.intervalSecs: must be a positive integer',
    ]);
    expect(messages({ maxRetries: 11, preAuthorizationFlag: 'preauth', name: 'a b' })).toEqual([
      'maxRetries: must be an integer from 0 to 10',
      "preAuthorizationFlag: must be 'pre_authorization', 'pre_auth' or 'both'",
      'name: must be 1 to 64 letters, digits, - or _',
    ]);
    expect(
      messages({
        webhook: { publicUrl: 'https://u:p@shop.example/hook', secret: 'short', acceptUnsigned: 1, leaseMs: -1 },
      }),
    ).toEqual([
      'webhook.publicUrl: must not contain a user name or password (user:pass@host)',
      'webhook.secret: must be a string of at least 32 characters',
      'webhook.acceptUnsigned: must be a boolean',
      'webhook.leaseMs: must be a positive integer',
    ]);
    expect(messages({ handlers: { timeoutMs: 0 } })).toEqual(['handlers.timeoutMs: must be a positive integer']);
    expect(messages({ handlers: 'fast' })).toEqual(['handlers: must be an object']);
    expect(
      messages({
        maxRetries: 0,
        webhook: { path: '/hooks/pay', publicUrl: 'https://shop.example/hook', secret: 's'.repeat(32) },
      }),
    ).toEqual([]);
  });
});

const VALID_DEFAULTS = {
  successLink: 'https://shop.example/ok',
  failLink: 'https://shop.example/ko',
  imageUrl: 'https://cdn.example/i.png',
};
