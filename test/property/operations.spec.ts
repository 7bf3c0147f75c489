import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import {
  DEFAULT_PRE_AUTHORIZATION_FLAG,
  PAYMENT_FIELDS,
  type PaymentFieldType,
  type PreAuthorizationFlag,
} from '../../lib/core/api/payment.fields.js';
import { PaymentsClient, PaymentsError, PaymentsValidationError } from '../../lib/index.js';
import { collectUnhandledRejections, settle } from '../faults/support/guards.js';
import { WireCheckingServer } from './wire-server.js';

// Random inputs to the four operations against a loopback server that checks the wire.
// Properties: no request ever carries invalid data; nothing but a PaymentsError is ever thrown;
// a refused input sends nothing; an accepted one arrives with exactly the documented mapping.

const PUBLIC_KEY = 'pk_prop';
const PRIVATE_KEY = 'sk_prop_secret_0123456789';
const DEFAULTS = {
  successLink: 'https://shop.example/ok',
  failLink: 'https://shop.example/ko',
  sessionTimeoutSecs: 900,
};
const RUNS = Number(process.env.PROPERTY_RUNS ?? 1500);

const rejections = collectUnhandledRejections();
let server: WireCheckingServer;
let client: PaymentsClient;

beforeAll(async () => {
  server = await WireCheckingServer.start(`Bearer ${PUBLIC_KEY}:${PRIVATE_KEY}`);
  client = new PaymentsClient({
    publicKey: PUBLIC_KEY,
    privateKey: PRIVATE_KEY,
    baseUrl: server.url,
    ...DEFAULTS,
    timeoutMs: 5000,
    maxRetries: 0,
    logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
  });
});
afterAll(async () => {
  await client.close();
  await server.close();
  await settle();
  rejections.stop();
  expect(rejections.seen).toEqual([]);
});

// ---------------------------------------------------------------- arbitraries
const HOSTILE_STRINGS = [
  '',
  ' ',
  '\t\n',
  '0',
  '00',
  '000',
  '-1',
  '+1',
  '1e3',
  '1.5',
  '1,5',
  ' 12',
  '12 ',
  '١٢٣',
  '１２',
  '०१',
  '0x10',
  '0b1',
  'Infinity',
  'NaN',
  '1_000',
  'javascript:alert(1)',
  'ftp://files.example/x',
  '//evil.example/x',
  'http://',
  'https://',
  'http:// a.example',
  'https://a b.example',
  'mailto:a@b.example',
  'data:text/html,<b>x</b>',
  'file:///etc/passwd',
  'http://a.example\u0000.evil',
  'https://exa\nmple.com',
  'HTTP://SHOP.EXAMPLE/OK',
  'http://[::1]:3000/x',
  'https://shop.example:99999/x',
  'https://user:pass@shop.example/x',
  'https://xn--80ak6aa92e.com/',
  'https://shop.example/ok?x=1#frag',
  'http://localhost:3000/ok',
  '\ud800',
  'a\udfffb',
  '\u202e',
  '\ufeff',
  'null',
  'undefined',
  '{}',
  '[]',
  'x'.repeat(70_000),
];
const HOSTILE_VALUES: unknown[] = [
  null,
  undefined,
  NaN,
  Infinity,
  -Infinity,
  0,
  -0,
  -1,
  1.5,
  1e21,
  2 ** 53,
  Number.MAX_SAFE_INTEGER + 2,
  -Number.MAX_SAFE_INTEGER,
  true,
  false,
  10n,
  [],
  ['100'],
  {},
  { amount: '1' },
  new Date(0),
  /x/,
  new String('100'),
  new Number(100),
  Symbol('s'),
  () => '100',
  new Map(),
  Buffer.from('100'),
  Object.create(null),
];

const hostile = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
  { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_VALUES) },
  {
    weight: 2,
    arbitrary: fc.anything({
      maxDepth: 2,
      withBigInt: true,
      withDate: true,
      withMap: true,
      withSet: true,
      withTypedArray: true,
      withNullPrototype: true,
      withSparseArray: true,
    }),
  },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.integer({ min: -1e9, max: 0 }) },
);

// Valid amounts have at most 15 significant digits (MAX_AMOUNT_DIGITS; every one is then an
// exact JSON number too); leading zeros are allowed and dropped.
const MAX_AMOUNT = 999_999_999_999_999;
const digits = fc
  .tuple(fc.constantFrom('', '0', '000'), fc.bigInt({ min: 1n, max: BigInt(MAX_AMOUNT) }))
  .map(([zeros, n]) => `${zeros}${n}`);
const validAmount = fc.oneof(digits, fc.integer({ min: 1, max: MAX_AMOUNT }));
const validUrl = fc.oneof(
  fc.constantFrom(
    'https://shop.example/ok',
    'http://localhost:3000/cb',
    'https://cdn.example.com/logo.png?v=2',
    'http://127.0.0.1:8080/x',
    'https://sub.shop.example/a/b?c=d#e',
  ),
  fc.webUrl({ validSchemes: ['http', 'https'], withQueryParameters: true, withFragments: true }),
);
// Identifiers (tracking, payment and client ids) follow one rule: non-blank, at most 256 characters, no control characters, well-formed Unicode.
const isIdentifier = (v: unknown): v is string =>
  typeof v === 'string' && /\S/.test(v) && v.length <= 256 && !/\p{Cc}/u.test(v) && !/\p{Cs}/u.test(v);
const validTracking = fc
  .oneof(
    fc.string({ unit: 'binary', minLength: 1, maxLength: 60 }),
    fc.constantFrom('order-42', 'x'.repeat(256), 'ü€😀', 'a b'),
  )
  .filter(isIdentifier);

const validInput = fc
  .record(
    {
      amount: validAmount,
      successLink: validUrl,
      failLink: validUrl,
      webhook: validUrl,
      developerTrackingId: validTracking,
      sessionTimeoutSecs: fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }),
      acceptCard: fc.boolean(),
      imageUrl: validUrl,
      preAuthorization: fc.boolean(),
      clientId: validTracking,
      destinations: fc.array(
        fc.record({ merchantId: validTracking, weight: fc.nat({ max: 1000 }), asString: fc.boolean() }),
        { minLength: 1, maxLength: 32 },
      ),
    },
    { requiredKeys: ['amount'] },
  )
  .map(({ destinations, ...input }) =>
    destinations === undefined ? input : { ...input, destinations: splitAmount(input.amount, destinations) },
  );

/**
 * Parts of a split payment that add up to at most the amount, each at least 1 millime: one each,
 * then the rest shared by weight (rounded down). Entries beyond the amount are dropped.
 */
function splitAmount(
  amount: string | number,
  shares: Array<{ merchantId: string; weight: number; asString: boolean }>,
) {
  const total = BigInt(amount);
  const kept = shares.slice(0, Number(total < 32n ? total : 32n));
  const rest = total - BigInt(kept.length);
  const weights = BigInt(kept.reduce((sum, s) => sum + s.weight, 0)) || 1n;
  return kept.map(({ merchantId, weight, asString }) => {
    const part = 1n + (rest * BigInt(weight)) / weights;
    return { merchantId, amount: asString ? part.toString() : Number(part) };
  });
}

const mixedField = <T>(valid: fc.Arbitrary<T>) =>
  fc.oneof({ weight: 2, arbitrary: valid }, { weight: 1, arbitrary: hostile });
const mixedInput = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record(
      {
        amount: mixedField(validAmount),
        successLink: mixedField(validUrl),
        failLink: mixedField(validUrl),
        webhook: mixedField(validUrl),
        developerTrackingId: mixedField(validTracking),
        sessionTimeoutSecs: mixedField(fc.integer({ min: 1, max: 1e6 })),
        acceptCard: mixedField(fc.boolean()),
        imageUrl: mixedField(validUrl),
        preAuthorization: mixedField(fc.boolean()),
        clientId: mixedField(validTracking),
        destinations: mixedField(fc.constant([{ merchantId: 'm-1', amount: '1' }])),
      },
      { requiredKeys: [] },
    ),
  },
  // Valid inputs plus unknown keys (typos, snake_case spellings, prototype tricks).
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        validInput,
        fc.dictionary(
          fc.constantFrom(
            'success_link',
            'Amount',
            'amountt',
            '__proto__',
            'constructor',
            'toString',
            'extra',
            'webhookUrl',
            'paymentId',
          ),
          hostile,
          { minKeys: 1, maxKeys: 2 },
        ),
      )
      .map(([v, extra]) => Object.assign(Object.create(null) as object, v, extra)),
  },
  { weight: 1, arbitrary: hostile },
);

// ---------------------------------------------------------------- oracles
// The field names, wire names and kinds come from the field table; what each kind becomes on the
// wire is written here again, independently of the client's conversions.
function expectedAmount(amount: unknown): string {
  return typeof amount === 'number' ? String(amount) : (amount as string).replace(/^0+/, '');
}

/** The wire carries JSON: what a value becomes once serialised (a `new String('x')` travels as "x"). */
const asJson = (value: unknown): unknown => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

const WIRE_FORM: Record<PaymentFieldType, (value: unknown) => unknown> = {
  millimes: expectedAmount,
  destinations: (list) =>
    (list as Array<{ merchantId: string; amount: unknown }>).map((d) => ({
      amount: Number(expectedAmount(d.amount)),
      destination: d.merchantId,
    })),
  httpUrl: asJson,
  identifier: asJson,
  positiveInteger: asJson,
  boolean: asJson,
};

function expectedWire(
  input: Record<string, unknown>,
  flag: PreAuthorizationFlag = DEFAULT_PRE_AUTHORIZATION_FLAG,
): Record<string, unknown> {
  const wire: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(PAYMENT_FIELDS)) {
    const own = input[name] === undefined || input[name] === null ? undefined : input[name];
    const value = own ?? (field.fromOptions ? (DEFAULTS as Record<string, unknown>)[name] : undefined);
    if (value === undefined) continue;
    const names =
      name === 'preAuthorization' ? (flag === 'both' ? ['pre_authorization', 'pre_auth'] : [flag]) : [field.wire];
    for (const wireName of names) wire[wireName] = WIRE_FORM[field.type](value);
  }
  return wire;
}

/**
 * Runs one call; returns a description of what went wrong, or undefined. `refusal` says which
 * errors are acceptable: `validation` (a PaymentsValidationError with fields, nothing sent) for
 * random input, `none` for input that is valid, where any error at all is a failure.
 */
async function probe(
  call: () => Promise<unknown>,
  onSuccess: (result: unknown, sent: number) => string | undefined,
  refusal: 'validation' | 'none' = 'validation',
): Promise<string | undefined> {
  const before = server.requests.length;
  const violationsBefore = server.violations.length;
  let result: unknown;
  try {
    result = await call();
  } catch (error) {
    if (!(error instanceof PaymentsError)) return `threw a non-PaymentsError: ${String(error)}`;
    if (refusal === 'none') return `a valid input was refused: ${error.code} (${error.message.slice(0, 200)})`;
    if (!(error instanceof PaymentsValidationError))
      return `threw ${error.code} (${error.message.slice(0, 200)}) for an input the service accepted`;
    if (server.requests.length !== before) return 'a refused input still sent a request';
    if (error.fields.length === 0) return 'a validation error without fields';
    return undefined;
  }
  if (server.violations.length !== violationsBefore)
    return `invalid wire: ${server.violations.slice(violationsBefore).join('; ')}`;
  return onSuccess(result, server.requests.length - before);
}

const asserted = (problem: string | undefined) => {
  if (problem) throw new Error(problem);
};

// ---------------------------------------------------------------- properties
describe('generatePayment with random input', () => {
  it('valid inputs always reach the service, with exactly the documented snake_case mapping', async () => {
    const sentKeys = new Map<string, number>();
    await fc.assert(
      fc.asyncProperty(validInput, async (input) => {
        const problem = await probe(
          () => client.generatePayment(input),
          (result, sent) => {
            if (sent !== 1) return `sent ${sent} requests`;
            const request = server.requests.at(-1)!;
            expect(request.body).toEqual(expectedWire(input));
            for (const key of Object.keys(request.body as object)) sentKeys.set(key, (sentKeys.get(key) ?? 0) + 1);
            const tracking = (request.body as Record<string, unknown>).developer_tracking_id;
            const id = `pay_${server.requests.filter((r) => r.path.endsWith('generate_payment')).length}`;
            expect(result).toEqual({
              paymentId: id,
              link: `https://checkout.example/shop/${id}`,
              ...(tracking === undefined ? {} : { developerTrackingId: tracking }),
            });
            return undefined;
          },
          'none',
        );
        asserted(problem);
      }),
      { numRuns: Math.round(RUNS * 0.7) },
    );
    // Every field of the table reached the wire in a good share of the runs.
    const rare = Object.values(PAYMENT_FIELDS)
      .map((field) => field.wire)
      .filter((wire) => (sentKeys.get(wire) ?? 0) < RUNS / 20);
    expect(rare).toEqual([]);
  });

  it('hostile inputs: no invalid request is ever sent; only PaymentsValidationError is thrown; accepted ones map exactly', async () => {
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(mixedInput, async (input) => {
        const problem = await probe(
          () => client.generatePayment(input as never),
          (_result, sent) => {
            accepted++;
            if (sent !== 1) return `sent ${sent} requests`;
            const wire = server.requests.at(-1)!;
            expect(wire.body).toEqual(expectedWire(input as Record<string, unknown>));
            return undefined;
          },
        );
        asserted(problem);
      }),
      { numRuns: RUNS * 2 },
    );
    const refused = RUNS * 2 - accepted;
    // Both sides of the property were exercised.
    // (Random inputs: about 1 in 40 is valid, 58 to 87 of 3,000 in four runs; the bound leaves room for chance.)
    expect(accepted).toBeGreaterThan(RUNS / 50);
    expect(refused).toBeGreaterThan(RUNS / 2);
  });
});

describe('refundPayment, cancelPayment and listBindings with random ids', () => {
  const validId = fc.oneof(
    fc.constantFrom(
      'pay_1',
      'pay_000000000000000000000001',
      ' x ',
      'ü',
      '😀',
      'a'.repeat(256),
      'id with spaces & = ? # / %',
      'id with spaces & = : ;',
    ),
    fc.string({ unit: 'binary', minLength: 1, maxLength: 50 }).filter(isIdentifier),
  );
  const anyId = fc.oneof(
    validId,
    hostile,
    fc.string({ unit: 'binary', maxLength: 50 }),
    fc.constantFrom('a'.repeat(257), 'a\nb', 'a\u0000b', 'x\ud800', '..', '%2e%2e'),
  );
  // A payment id also goes into a request path (verify): it may not change it (pathSegmentId, wire.values.ts).
  const isPaymentId = (v: unknown): v is string =>
    isIdentifier(v) && !/^\.+$/.test(v.trim()) && !/[/\\?#]/.test(v) && !/%[0-9a-f]{2}/i.test(v);
  const isValidId = isPaymentId;

  it.each([
    ['refundPayment', (id: unknown) => client.refundPayment(id as string), '/api/v2/refund_payment'],
    ['cancelPayment', (id: unknown) => client.cancelPayment(id as string), '/api/v2/cancel_payment'],
  ] as const)('%s: sends exactly {payment_id} for a valid id, nothing otherwise', async (_name, call, path) => {
    await fc.assert(
      fc.asyncProperty(anyId, async (id) => {
        const before = server.requests.length;
        const problem = await probe(
          () => call(id),
          (result, sent) => {
            if (!isValidId(id)) return `accepted the invalid id ${JSON.stringify(String(id)).slice(0, 40)}`;
            if (sent !== 1) return `sent ${sent} requests`;
            const request = server.requests.at(-1)!;
            expect([request.method, request.path, request.body]).toEqual(['POST', path, { payment_id: id }]);
            expect((result as { paymentId: string }).paymentId).toBe(id);
            return undefined;
          },
        );
        if (!problem && isValidId(id) && server.requests.length !== before + 1)
          throw new Error('a valid id was refused');
        asserted(problem);
      }),
      { numRuns: RUNS },
    );
  });

  it('listBindings: sends exactly ?client_id=<id> for a valid id (any Unicode), nothing otherwise', async () => {
    await fc.assert(
      fc.asyncProperty(anyId, async (id) => {
        const before = server.requests.length;
        const problem = await probe(
          () => client.listBindings(id as string),
          (result, sent) => {
            if (!isIdentifier(id)) return `accepted the invalid id ${JSON.stringify(String(id)).slice(0, 40)}`;
            if (sent !== 1) return `sent ${sent} requests`;
            const request = server.requests.at(-1)!;
            expect([request.method, request.path, request.query, request.rawBody]).toEqual([
              'GET',
              '/api/v2/bindings/list',
              [['client_id', id]],
              '',
            ]);
            expect(result).toEqual([
              {
                bindingId: 'b-1',
                clientId: id,
                cardLastFour: '4242',
                cardBrand: 'VISA',
                status: 'active',
                createdAt: '2026-01-01T00:00:00Z',
              },
            ]);
            return undefined;
          },
        );
        // (Ids longer than 256 characters are now refused before sending, so the 431 a too-long
        // request line used to get can no longer happen: every valid id reaches the service.)
        if (!problem && isIdentifier(id) && server.requests.length !== before + 1)
          throw new Error('a valid id was refused');
        asserted(problem);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('inputs the properties found, pinned', () => {
  const before = () => server.requests.length;

  it('an own "__proto__" key (as JSON.parse makes) is refused as an unknown field, never a TypeError', async () => {
    for (const input of [
      JSON.parse('{"amount":"1","__proto__":{}}'),
      JSON.parse('{"amount":"1","__proto__":"x"}'),
      { amount: 1, ['__proto__']: Object.create(null) },
    ]) {
      const n = before();
      const error = await client.generatePayment(input).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentsValidationError);
      expect((error as PaymentsValidationError).fields).toEqual([
        { field: '__proto__', messages: ['is not a field of generatePayment'] },
      ]);
      expect(server.requests.length).toBe(n);
    }
  });

  it.each(['constructor', 'hasOwnProperty', 'isPrototypeOf', '__defineGetter__', 'toString'])(
    'an unknown field named like an Object.prototype member (%s) is refused too',
    async (name) => {
      const n = before();
      const error = await client.generatePayment({ amount: '1', [name]: 'x' }).catch((e: unknown) => e);
      expect((error as PaymentsValidationError).fields).toEqual([
        { field: name, messages: ['is not a field of generatePayment'] },
      ]);
      expect(server.requests.length).toBe(n);
    },
  );

  it.each([2 ** 53, 1e21, Number.MAX_VALUE])(
    'sessionTimeoutSecs %p (an integer, but not an exact one) is refused',
    async (secs) => {
      const n = before();
      const error = await client.generatePayment({ amount: '1', sessionTimeoutSecs: secs }).catch((e: unknown) => e);
      expect((error as PaymentsValidationError).fields).toEqual([
        { field: 'sessionTimeoutSecs', messages: ['must be a positive integer'] },
      ]);
      expect(server.requests.length).toBe(n);
    },
  );

  it('the largest exact integer is accepted as sessionTimeoutSecs', async () => {
    await client.generatePayment({ amount: '1', sessionTimeoutSecs: Number.MAX_SAFE_INTEGER });
    expect((server.requests.at(-1)!.body as Record<string, unknown>).session_timeout_secs).toBe(
      Number.MAX_SAFE_INTEGER,
    );
  });

  it.each(['\ud800', 'abc\udfff', '\udc00\ud800'])(
    'listBindings(%p): a client id that cannot be URL-encoded is a validation error, not a connection error',
    async (id) => {
      const n = before();
      const error = await client.listBindings(id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentsValidationError);
      expect((error as PaymentsValidationError).fields[0].field).toBe('clientId');
      expect(server.requests.length).toBe(n);
    },
  );

  it('a client id with astral characters (surrogate pairs) is fine', async () => {
    await expect(client.listBindings('😀-client')).resolves.toHaveLength(1);
    expect(server.requests.at(-1)!.query).toEqual([['client_id', '😀-client']]);
  });

  it('a client id too long for a request line (or just over 256 characters) is a validation error, nothing sent', async () => {
    for (const id of ['x'.repeat(70_000), 'x'.repeat(257)]) {
      const n = before();
      const error = await client.listBindings(id).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PaymentsValidationError);
      expect((error as PaymentsValidationError).fields).toEqual([
        { field: 'clientId', messages: ['must be at most 256 characters'] },
      ]);
      expect(server.requests.length).toBe(n);
    }
  });
});
