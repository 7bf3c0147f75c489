import { MemoryPaymentsStore } from '../../lib/core/store/memory.store.js';
import type { PaymentsStore } from '../../lib/core/store/index.js';
import {
  medusaMemoryStoreWarning,
  providerIdOf,
  providerLabel,
  replacedPaidMessage,
} from '../../lib/medusa/medusa.replaced.js';

// The Medusa provider's rules around its configuration and replaced sessions, without Medusa.
describe('providerIdOf: the provider id Medusa gives, read from webhookUrl', () => {
  it.each<[unknown, string | undefined]>([
    ['https://shop.tn/hooks/payment/nestjs-payments_tn', 'pp_nestjs-payments_tn'],
    ['https://shop.tn/hooks/payment/nestjs-payments_main-2/', 'pp_nestjs-payments_main-2'],
    ['https://shop.tn/hooks/payment/nestjs-payments_tn?x=1', 'pp_nestjs-payments_tn'],
    ['https://shop.tn/hooks/payment/stripe_tn', undefined],
    ['https://shop.tn/other', undefined],
    [undefined, undefined],
    [42, undefined],
  ])('%p -> %p', (url, id) => {
    expect(providerIdOf(url)).toBe(id);
  });
});

describe('providerLabel: how a configuration error names the provider', () => {
  it.each<[Record<string, unknown>, RegExp]>([
    [
      { webhookUrl: 'https://s/hooks/payment/nestjs-payments_tn' },
      /^nestjs-payments\/medusa provider pp_nestjs-payments_tn$/,
    ],
    [
      { publicKey: 'pk_live_abc' },
      /^nestjs-payments\/medusa provider \(publicKey pk_live_abc, id pp_nestjs-payments_<id>/,
    ],
    [{}, /^nestjs-payments\/medusa provider \(id pp_nestjs-payments_<id> in medusa-config\)$/],
  ])('%p', (options, label) => {
    expect(providerLabel(options)).toMatch(label);
  });

  it('never shows the private key', () => {
    expect(providerLabel({ privateKey: 'secret-private-key-value' })).not.toContain('secret');
  });
});

describe('medusaMemoryStoreWarning: the in-memory store in production', () => {
  const shared = { close: async () => undefined } as unknown as PaymentsStore;
  it.each<[string, PaymentsStore | undefined, string | undefined, boolean]>([
    ['no store, production', undefined, 'production', true],
    ['a MemoryPaymentsStore, production', new MemoryPaymentsStore(), 'production', true],
    ['a shared store, production', shared, 'production', false],
    ['no store, development', undefined, 'development', false],
    ['no store, NODE_ENV unset', undefined, undefined, false],
    ['no store, test', undefined, 'test', false],
  ])('%s', (_name, store, nodeEnv, warns) => {
    const warning = medusaMemoryStoreWarning(store, nodeEnv);
    expect(warning !== undefined).toBe(warns);
    if (warning) expect(warning).toMatch(/PostgresPaymentsStore.*RedisPaymentsStore/);
  });
});

describe('replacedPaidMessage', () => {
  it('names the payment, the cart and the session, and says to refund', () => {
    const message = replacedPaidMessage(
      { paymentId: 'pay_1', amount: '12345', sessionId: 'payses_1', cartId: 'cart_1' },
      '12.345',
      'later',
    );
    expect(message).toMatch(/pay_1.*12\.345 TND.*cart cart_1.*payment session payses_1.*after.*refund/);
  });

  it('without a cart or a session, says so', () => {
    expect(replacedPaidMessage({ paymentId: 'pay_2', amount: '1' }, '0.001', 'now')).toMatch(
      /no session known.*before/,
    );
  });
});
