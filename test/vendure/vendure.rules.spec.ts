// The Vendure adapter's two rules, table-tested without Vendure: the exact money conversion and
// what a verified payment does to its order.
import { amountOwed, millimesToVendure, vendureToMillimes } from '../../lib/vendure/vendure.money.js';
import { memoryStoreWarning, plainVendureMessage } from '../../lib/vendure/vendure.messages.js';
import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import { methodAccountOf, methodRegistration } from '../../lib/vendure/vendure.credentials.js';
import { inboxDialectOf, vendureInboxPlanOf } from '../../lib/vendure/vendure.inbox.js';
import type { PaymentsStore } from '../../lib/core/store/index.js';
import {
  decideSettlement,
  orderCodeOf,
  trackingIdOf,
  type SettlementFacts,
} from '../../lib/vendure/vendure.decision.js';

describe('vendureToMillimes / millimesToVendure', () => {
  it.each([
    [12550, 2, '125500'],
    [1, 2, '10'],
    [0, 2, '0'],
    [12555, 3, '12555'],
    [125, 1, '12500'],
    [7, 0, '7000'],
    [125550, 4, '12555'],
    [Number.MAX_SAFE_INTEGER, 2, '90071992547409910'],
  ])('%d at precision %d is %s millimes, and back', (minor, precision, millimes) => {
    expect(vendureToMillimes(minor, precision)).toBe(millimes);
    expect(millimesToVendure(millimes, precision)).toBe(minor);
  });

  it.each([
    [12.5, 2],
    [-1, 2],
    [Number.MAX_SAFE_INTEGER + 1, 2],
    [125555, 4],
    [1, 2.5],
    [1, -1],
  ])('%d at precision %d is refused', (minor, precision) => {
    expect(() => vendureToMillimes(minor, precision)).toThrow(RangeError);
  });

  it.each([
    ['5', 2],
    ['12.5', 3],
    ['-10', 2],
    ['', 2],
    ['90071992547409920', 2],
  ])('%s millimes at precision %d is not a whole Vendure amount', (millimes, precision) => {
    expect(() => millimesToVendure(millimes, precision)).toThrow(RangeError);
  });
});

describe('amountOwed', () => {
  it.each([
    ['no payment', 1500, [], 1500],
    ['a settled payment covers part', 1500, [{ amount: 1000, state: 'Settled' }], 500],
    ['an authorized payment covers too', 1500, [{ amount: 1500, state: 'Authorized' }], 0],
    [
      'declined, error and cancelled cover nothing',
      1500,
      ['Declined', 'Error', 'Cancelled'].map((state) => ({ amount: 1500, state })),
      1500,
    ],
    [
      'settled refunds uncover',
      1500,
      [
        {
          amount: 1500,
          state: 'Settled',
          refunds: [
            { total: 400, state: 'Settled' },
            { total: 300, state: 'Failed' },
          ],
        },
      ],
      400,
    ],
    ['never below zero', 1000, [{ amount: 1500, state: 'Settled' }], 0],
  ])('%s', (_name, total, payments, owed) => {
    expect(amountOwed(total, payments)).toBe(owed);
  });
});

describe('decideSettlement', () => {
  const base: SettlementFacts = { verified: 'Settled', orderState: 'ArrangingPayment', placed: false, recorded: false };
  it.each<[string, Partial<SettlementFacts>, ReturnType<typeof decideSettlement>]>([
    ['ArrangingPayment: added', {}, { kind: 'add', state: 'Settled' }],
    ['AddingItems: added (moved first)', { orderState: 'AddingItems' }, { kind: 'add', state: 'Settled' }],
    ['pre-authorization: added Authorized', { verified: 'Authorized' }, { kind: 'add', state: 'Authorized' }],
    [
      'ArrangingAdditionalPayment of a placed order: added',
      { orderState: 'ArrangingAdditionalPayment', placed: true },
      { kind: 'add', state: 'Settled' },
    ],
    [
      'already recorded (a retry): nothing',
      { orderState: 'PaymentSettled', placed: true, recorded: true },
      { kind: 'nothing' },
    ],
    [
      'recorded, order shipped since: nothing',
      { orderState: 'Shipped', placed: true, recorded: true },
      { kind: 'nothing' },
    ],
    [
      'cancelled order: reported',
      { orderState: 'Cancelled', placed: true },
      { kind: 'report', reason: 'order-cancelled' },
    ],
    ['cancelled before placing: reported', { orderState: 'Cancelled' }, { kind: 'report', reason: 'order-cancelled' }],
    [
      'a second payment of a paid order: reported',
      { orderState: 'PaymentSettled', placed: true },
      { kind: 'report', reason: 'order-already-paid' },
    ],
    [
      'a payment of a shipped order: reported',
      { orderState: 'Shipped', placed: true },
      { kind: 'report', reason: 'order-already-paid' },
    ],
    ['an order being modified: reported', { orderState: 'Modifying' }, { kind: 'report', reason: 'order-not-payable' }],
    ['no such order: reported', { orderState: undefined }, { kind: 'report', reason: 'order-not-found' }],
  ])('%s', (_name, facts, action) => {
    expect(decideSettlement({ ...base, ...facts })).toEqual(action);
  });
});

describe('trackingIdOf / orderCodeOf', () => {
  // An additional payment (ArrangingAdditionalPayment) is no second charge of its order: its
  // tracking id differs from the first payment's, and still names the order.
  it.each([
    ['T_1', 0, 'T_1'],
    ['T_1', 12500, 'T_1~12500'],
    ['ABCDEF0123456789', 300, 'ABCDEF0123456789~300'],
  ])('%s with %i paid -> %s, and back', (code, paid, trackingId) => {
    expect(trackingIdOf(code, paid)).toBe(trackingId);
    expect(orderCodeOf(trackingId)).toBe(code);
  });

  it('no tracking id names no order', () => {
    expect(orderCodeOf(undefined)).toBeUndefined();
  });
});

describe('plainVendureMessage: Vendure errors in plain words', () => {
  const i18nError = (key: string, variables: Record<string, string> = {}) =>
    Object.assign(new Error(key), { variables });
  const translating = {
    translate: (key: string, variables?: Record<string, string | number>) =>
      key === 'message.cannot-transition-to-payment-without-customer'
        ? 'Cannot transition Order to the "ArrangingPayment" state without Customer details'
        : key === 'message.cannot-transition-order-from-to'
          ? `Cannot transition Order from "${variables?.fromState}" to "${variables?.toState}"`
          : key,
  };
  const keysOnly = { translate: (key: string) => key };
  const throwing = {
    translate: (): string => {
      throw new Error('boom');
    },
  };

  it.each<[string, { translate(key: string, v?: Record<string, string | number>): string }, Error, string]>([
    [
      'translated by the request',
      translating,
      i18nError('message.cannot-transition-to-payment-without-customer'),
      'Cannot transition Order to the "ArrangingPayment" state without Customer details',
    ],
    [
      'with its variables',
      translating,
      i18nError('message.cannot-transition-order-from-to', { fromState: 'AddingItems', toState: 'PaymentSettled' }),
      'Cannot transition Order from "AddingItems" to "PaymentSettled"',
    ],
    [
      'no translation: the key in words',
      keysOnly,
      i18nError('message.cannot-transition-to-payment-without-customer'),
      'cannot transition to payment without customer',
    ],
    ['a translation that throws: the key in words', throwing, i18nError('error.no-stock'), 'no stock'],
    ['a plain message is kept', translating, new Error('Stock is low: 2 left.'), 'Stock is low: 2 left.'],
  ])('%s', (_name, ctx, error, expected) => {
    expect(plainVendureMessage(ctx, error)).toBe(expected);
  });
});

describe('memoryStoreWarning: the in-memory store in production', () => {
  const shared = { close: async () => undefined } as unknown as PaymentsStore;
  it.each<[string, PaymentsStore | undefined, string | undefined, boolean]>([
    ['no store, production', undefined, 'production', true],
    ['a MemoryPaymentsStore, production', new MemoryPaymentsStore(), 'production', true],
    ['a shared store, production', shared, 'production', false],
    ['no store, development', undefined, 'development', false],
    ['no store, NODE_ENV unset', undefined, undefined, false],
  ])('%s', (_name, store, nodeEnv, warns) => {
    const warning = memoryStoreWarning(store, nodeEnv);
    expect(warning !== undefined).toBe(warns);
    if (warning) expect(warning).toMatch(/PostgresPaymentsStore.*RedisPaymentsStore/);
  });
});

describe("methodAccountOf: a payment method's own account, from its handler arguments", () => {
  const arg = (name: string, value: string) => ({ name, value });
  it.each([
    ['no keys', [arg('preAuthorization', 'true')], 'plugin'],
    ['blank keys (the Admin clears a field)', [arg('publicKey', ' '), arg('privateKey', '')], 'plugin'],
    ['both keys', [arg('publicKey', 'pk'), arg('privateKey', 'sk')], 'own'],
    ['both keys and a secret', [arg('publicKey', 'pk'), arg('privateKey', 'sk'), arg('webhookSecret', 's')], 'own'],
    ['a private key alone', [arg('privateKey', 'sk')], 'incomplete'],
    ['a public key alone', [arg('publicKey', 'pk'), arg('webhookSecret', 's')], 'incomplete'],
    ['a secret alone', [arg('webhookSecret', 's')], 'plugin'],
  ])('%s: %s', (_name, args, kind) => {
    expect(methodAccountOf(args).kind).toBe(kind);
  });

  it('names the missing key, and its fingerprint changes with any of the three values', () => {
    expect(methodAccountOf([arg('privateKey', 'sk')])).toEqual({ kind: 'incomplete', missing: 'publicKey' });
    expect(methodAccountOf([arg('publicKey', 'pk')])).toEqual({ kind: 'incomplete', missing: 'privateKey' });
    const fingerprint = (...args: Array<{ name: string; value: string }>) => {
      const account = methodAccountOf(args);
      return account.kind === 'own' ? account.fingerprint : '';
    };
    const base = fingerprint(arg('publicKey', 'pk'), arg('privateKey', 'sk'));
    expect(base).toMatch(/^[0-9a-f]{64}$/);
    expect(fingerprint(arg('publicKey', 'pk'), arg('privateKey', 'sk2'))).not.toBe(base);
    expect(fingerprint(arg('publicKey', 'pk'), arg('privateKey', 'sk'), arg('webhookSecret', 'w'))).not.toBe(base);
    expect(base).not.toContain('sk');
  });

  it.each([
    ['card', 'method-card'],
    ['card-preauth', 'method-card-preauth'],
    ['a.b c', 'method-a_b_c'],
    ['x'.repeat(80), `method-${'x'.repeat(57)}`],
  ])('the registration of method %s is %s', (code, name) => {
    expect(methodRegistration(code)).toBe(name);
  });
});

describe('inboxDialectOf / vendureInboxPlanOf: where the plugin settles exactly once', () => {
  it.each([
    ['postgres', 'postgres'],
    ['mysql', 'mysql'],
    ['mariadb', 'mysql'],
    ['aurora-mysql', 'mysql'],
    ['sqljs', 'sqlite'],
    ['sqlite', 'sqlite'],
    ['better-sqlite3', 'sqlite'],
    ['mssql', undefined],
    ['oracle', undefined],
    [undefined, undefined],
  ])('%s: %s', (type, dialect) => {
    expect(inboxDialectOf(type)).toBe(dialect);
  });

  it.each<[string, { dbType: string | undefined; transactionalStore: boolean }, string]>([
    ['PostgreSQL, a plain store', { dbType: 'postgres', transactionalStore: false }, 'inbox:postgres'],
    ['MariaDB', { dbType: 'mariadb', transactionalStore: false }, 'inbox:mysql'],
    ['sql.js', { dbType: 'sqljs', transactionalStore: false }, 'inbox:sqlite'],
    ['a transactional store', { dbType: 'postgres', transactionalStore: true }, 'none:transactional'],
    ['a database the inbox does not write', { dbType: 'mssql', transactionalStore: false }, 'none:mssql'],
  ])('%s', (_name, setup, expected) => {
    const plan = vendureInboxPlanOf(setup);
    const [kind, detail] = expected.split(':');
    expect(plan.kind).toBe(kind);
    if (plan.kind === 'inbox') expect(plan.dialect).toBe(detail);
    else expect(plan.reason).toContain(detail);
  });
});
