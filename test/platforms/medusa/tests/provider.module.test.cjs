// The provider inside Medusa's payment module (moduleIntegrationTestRunner, real PostgreSQL),
// the sandbox as the service: initiate -> pay -> webhook -> authorize -> captured; refunds;
// pre-authorization; failure; pending; duplicates; the amount conversion.
/* global jest, it, expect, beforeAll, afterAll */
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { moduleIntegrationTestRunner } = require('@medusajs/test-utils');
const { Modules, BigNumber } = require('@medusajs/framework/utils');
const { PaymentsSandbox } = require('nestjs-payments/testing');

jest.setTimeout(60_000);

/** A copy of `record` without `key`: data as Medusa would hold it had it missed an update. */
const without = (record, key) => Object.fromEntries(Object.entries(record).filter(([k]) => k !== key));

/** A loopback receiver of the sandbox's webhook deliveries: what Medusa's route would be handed. */
function hookReceiver() {
  const bodies = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      bodies.push({ data: raw ? JSON.parse(raw) : {}, rawData: Buffer.from(raw), headers: req.headers });
      res.end('ok');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        server,
        bodies,
        url: `http://127.0.0.1:${server.address().port}/hooks/payment/nestjs-payments_sandbox`,
      }),
    ),
  );
}

/** A js block of docs/medusa.md marked as run here, by the file name on its first line, written beside the tests. */
function docModule(file) {
  const guide = fs.readFileSync(path.join(__dirname, '..', 'docs', 'medusa.md'), 'utf8');
  for (const match of guide.matchAll(/<!-- verified-by: test\/platforms\/medusa -->\n\n```js\n([\s\S]*?)^```$/gm)) {
    if (match[1].startsWith(`// file: ${file}\n`)) {
      const target = path.join(__dirname, '..', file);
      fs.writeFileSync(target, match[1]);
      return require(target);
    }
  }
  throw new Error(`docs/medusa.md has no snippet ${file}`);
}

process.env.STOREFRONT_URL ??= 'http://127.0.0.1:8000';
const { paymentRequest } = docModule('payment-request.js');

let sandbox;
let hooks;
const PROVIDER = 'pp_nestjs-payments_sandbox';
const PREAUTH = 'pp_nestjs-payments_preauth';
const LOGGED = 'pp_nestjs-payments_logged';
const HOOKED = 'pp_nestjs-payments_hooked';
const HELD = 'pp_nestjs-payments_heldlog';

/** What the `logged` provider logs (its `logger` option), by level. */
const logged = { warn: [], error: [] };
const keepingLogger = {
  log: () => undefined,
  warn: (message) => logged.warn.push(message),
  error: (message) => logged.error.push(message),
};

// The runner registers its hooks when the file loads: the sandbox must exist by then, so its
// options are read lazily (a getter) once beforeAll has started it.
const options = (extra) => ({
  get publicKey() {
    return sandbox.publicKey;
  },
  get privateKey() {
    return sandbox.privateKey;
  },
  get baseUrl() {
    return sandbox.url;
  },
  get successLink() {
    return `${sandbox.url}/sandbox/success`;
  },
  get failLink() {
    return `${sandbox.url}/sandbox/fail`;
  },
  get webhookUrl() {
    return hooks.url;
  },
  ...extra,
});

beforeAll(async () => {
  sandbox = await PaymentsSandbox.start();
  hooks = await hookReceiver();
});

afterAll(async () => {
  await sandbox?.close();
  hooks?.server.close();
});

const DB_NAME = `nestjs_payments_medusa_module_${process.pid}`;

moduleIntegrationTestRunner({
  moduleName: Modules.PAYMENT,
  dbName: DB_NAME,
  cwd: path.dirname(require.resolve('@medusajs/payment/package.json')),
  moduleOptions: {
    providers: [
      { resolve: 'nestjs-payments/medusa', id: 'sandbox', options: options({}) },
      { resolve: 'nestjs-payments/medusa', id: 'preauth', options: options({ capture: false }) },
      { resolve: 'nestjs-payments/medusa', id: 'logged', options: options({ logger: keepingLogger }) },
      { resolve: 'nestjs-payments/medusa', id: 'hooked', options: options({ paymentRequest }) },
      { resolve: 'nestjs-payments/medusa', id: 'heldlog', options: options({ capture: false, logger: keepingLogger }) },
    ],
  },
  testSuite: ({ service }) => {
    async function session(amount, provider = PROVIDER) {
      const collection = await service.createPaymentCollections({ currency_code: 'tnd', amount });
      return service.createPaymentSession(collection.id, {
        provider_id: provider,
        currency_code: 'tnd',
        amount,
        data: {},
      });
    }

    /** The sandbox's webhook delivery for a payment, handed to the provider as Medusa's route does. */
    async function payAndDeliver(paymentId, provider) {
      hooks.bodies.length = 0;
      await sandbox.completePayment(paymentId);
      const body = hooks.bodies.find((b) => JSON.stringify(b.data).includes(paymentId));
      expect(body).toBeTruthy();
      return service.getWebhookActionAndData({ provider: provider.replace(/^pp_/, ''), payload: body });
    }

    it('two tabs: the replaced session, paid later, is reported (session, cart) and makes nothing in Medusa', async () => {
      const collection = await service.createPaymentCollections({ currency_code: 'tnd', amount: 10 });
      const input = { provider_id: LOGGED, currency_code: 'tnd', amount: 10, data: { cart_id: 'cart_two_tabs' } };
      const first = await service.createPaymentSession(collection.id, input);
      // The second tab: the store API's new session deletes the first one.
      await service.deletePaymentSession(first.id);
      const second = await service.createPaymentSession(collection.id, input);
      expect(second.data.payment_id).not.toBe(first.data.payment_id);
      logged.error.length = 0;
      // The customer pays in the first tab: the money is taken at the service.
      const action = await payAndDeliver(first.data.payment_id, LOGGED);
      expect(action).toEqual({ action: 'not_supported' });
      const said = logged.error.filter((m) => m.includes(first.data.payment_id));
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/cart_two_tabs/);
      expect(said[0]).toContain(first.id);
      expect(said[0]).toMatch(/refund/);
      // The live session is paid as usual.
      expect((await payAndDeliver(second.data.payment_id, LOGGED)).action).toBe('captured');
    });

    it('a replaced pre-authorization is released: a hold in place when its session goes, a hold placed later by its webhook', async () => {
      const cancels = () => sandbox.requests.filter((r) => r.path === '/api/v2/cancel_payment').length;
      const collection = await service.createPaymentCollections({ currency_code: 'tnd', amount: 13 });
      const input = { provider_id: HELD, currency_code: 'tnd', amount: 13, data: { cart_id: 'cart_held_tabs' } };

      // Held in the first tab, then a second tab replaces the session: the hold is released at once.
      const held = await service.createPaymentSession(collection.id, input);
      await sandbox.completePayment(held.data.payment_id);
      expect(sandbox.getPayment(held.data.payment_id).state).toBe('preauthorized');
      await service.deletePaymentSession(held.id);
      expect(sandbox.getPayment(held.data.payment_id).state).toBe('cancelled');

      // Still pending when replaced (nothing held yet), then held in the old tab: its webhook releases it.
      const pending = await service.createPaymentSession(collection.id, input);
      await service.deletePaymentSession(pending.id);
      const live = await service.createPaymentSession(collection.id, input);
      logged.error.length = 0;
      logged.warn.length = 0;
      expect(await payAndDeliver(pending.data.payment_id, HELD)).toEqual({ action: 'not_supported' });
      expect(sandbox.getPayment(pending.data.payment_id).state).toBe('cancelled');
      const said = [...logged.error, ...logged.warn].filter((m) => m.includes(pending.data.payment_id));
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/cart_held_tabs/);
      expect(said[0]).toContain(pending.id);
      expect(said[0]).toMatch(/released/);
      expect(said[0]).not.toMatch(/refund/);
      expect(logged.error.filter((m) => m.includes(pending.data.payment_id))).toEqual([]);
      // A redelivery releases nothing again and reports nothing again.
      const before = cancels();
      const body = hooks.bodies.find((b) => JSON.stringify(b.data).includes(pending.data.payment_id));
      expect(await service.getWebhookActionAndData({ provider: HELD.replace(/^pp_/, ''), payload: body })).toEqual({
        action: 'not_supported',
      });
      expect(cancels()).toBe(before);
      // The live session is held as usual.
      expect((await payAndDeliver(live.data.payment_id, HELD)).action).toBe('authorized');
      expect(sandbox.getPayment(live.data.payment_id).state).toBe('preauthorized');

      // The cart changed after the link: the held old payment is released, the new one is asked.
      const changed = await service.createPaymentCollections({ currency_code: 'tnd', amount: 14 });
      const s = await service.createPaymentSession(changed.id, { ...input, amount: 14 });
      await sandbox.completePayment(s.data.payment_id);
      const updated = await service.updatePaymentSession({ id: s.id, amount: 16, currency_code: 'tnd', data: s.data });
      expect(sandbox.getPayment(s.data.payment_id).state).toBe('cancelled');
      expect(sandbox.getPayment(updated.data.payment_id)).toMatchObject({ amount: '16000', state: 'pending' });

      // Changed while still pending: the new payment is held and settles the session; the old one,
      // held afterwards, is released by its webhook.
      const again = await service.updatePaymentSession({
        id: s.id,
        amount: 17,
        currency_code: 'tnd',
        data: updated.data,
      });
      expect((await payAndDeliver(again.data.payment_id, HELD)).action).toBe('authorized');
      logged.error.length = 0;
      logged.warn.length = 0;
      expect(await payAndDeliver(updated.data.payment_id, HELD)).toEqual({ action: 'not_supported' });
      expect(sandbox.getPayment(updated.data.payment_id).state).toBe('cancelled');
      expect(sandbox.getPayment(again.data.payment_id).state).toBe('preauthorized');
      const second = [...logged.error, ...logged.warn].filter((m) => m.includes(updated.data.payment_id));
      expect(second.filter((m) => /its hold was released/.test(m) && m.includes(s.id))).toHaveLength(1);
    });

    it('a session deleted after its payment was paid is reported at once', async () => {
      const collection = await service.createPaymentCollections({ currency_code: 'tnd', amount: 11 });
      const s = await service.createPaymentSession(collection.id, {
        provider_id: LOGGED,
        currency_code: 'tnd',
        amount: 11,
        data: { cart_id: 'cart_paid_then_replaced' },
      });
      hooks.bodies.length = 0;
      await sandbox.completePayment(s.data.payment_id);
      logged.error.length = 0;
      await service.deletePaymentSession(s.id);
      const said = logged.error.filter((m) => m.includes(s.data.payment_id));
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/cart_paid_then_replaced/);
    });

    it('a cart changed after the link: the old payment, paid, is reported and makes nothing in Medusa', async () => {
      const collection = await service.createPaymentCollections({ currency_code: 'tnd', amount: 12 });
      const s = await service.createPaymentSession(collection.id, {
        provider_id: LOGGED,
        currency_code: 'tnd',
        amount: 12,
        data: { cart_id: 'cart_changed' },
      });
      const updated = await service.updatePaymentSession({
        id: s.id,
        amount: 15,
        currency_code: 'tnd',
        data: s.data,
      });
      expect(updated.data.payment_id).not.toBe(s.data.payment_id);
      expect(updated.data.cart_id).toBe('cart_changed');
      logged.error.length = 0;
      const action = await payAndDeliver(s.data.payment_id, LOGGED);
      expect(action).toEqual({ action: 'not_supported' });
      expect(logged.error.filter((m) => m.includes(s.data.payment_id) && m.includes('cart_changed'))).toHaveLength(1);
    });

    it('an options error names the provider; the in-memory store in production is called out at start', async () => {
      const { NestjsPaymentsProvider } = require('nestjs-payments/medusa');
      const wrong = { publicKey: 'pk_test_naming', baseUrl: sandbox.url };
      expect(() =>
        NestjsPaymentsProvider.validateOptions({
          ...wrong,
          webhookUrl: 'https://shop.example/hooks/payment/nestjs-payments_tn',
        }),
      ).toThrow(/pp_nestjs-payments_tn.*privateKey/);
      expect(() => NestjsPaymentsProvider.validateOptions(wrong)).toThrow(
        /nestjs-payments\/medusa provider.*privateKey/,
      );

      const warnings = [];
      const medusaLogger = { info: () => undefined, warn: (m) => warnings.push(m), error: () => undefined };
      const nodeEnv = process.env.NODE_ENV;
      const built = [];
      try {
        process.env.NODE_ENV = 'development';
        built.push(new NestjsPaymentsProvider({ logger: medusaLogger }, options({})));
        expect(warnings.filter((w) => /in-memory store/.test(w))).toEqual([]);
        process.env.NODE_ENV = 'production';
        built.push(new NestjsPaymentsProvider({ logger: medusaLogger }, options({})));
      } finally {
        process.env.NODE_ENV = nodeEnv;
        await Promise.all(built.map((p) => p.client.close()));
      }
      const said = warnings.filter((w) => /in-memory store/.test(w));
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/PostgresPaymentsStore/);
    });

    it('registers the provider', async () => {
      const providers = await service.listPaymentProviders();
      expect(providers.map((p) => p.id)).toEqual(expect.arrayContaining([PROVIDER, PREAUTH]));
    });

    it('initiate, pay, webhook, authorize: captured, one order; a refund retried refunds once', async () => {
      const s = await session(new BigNumber('12.345'));
      expect(s.data.link).toMatch(/^http:\/\/127\.0\.0\.1/);
      expect(s.data.amount).toBe('12345');
      expect(s.data.session_id).toBe(s.id);
      expect(sandbox.getPayment(s.data.payment_id).amount).toBe('12345');

      // Pending: authorize refuses, so no cart completes.
      await expect(service.authorizePaymentSession(s.id, {})).rejects.toThrow(/not authorized/);

      hooks.bodies.length = 0;
      await sandbox.completePayment(s.data.payment_id);
      expect(hooks.bodies).toHaveLength(1);
      const verifiesBefore = sandbox.verifyCalls(s.data.payment_id);
      const action = await service.getWebhookActionAndData({
        provider: 'nestjs-payments_sandbox',
        payload: hooks.bodies[0],
      });
      expect(action).toEqual({ action: 'captured', data: { session_id: s.id, amount: '12.345' } });
      // Duplicates: same answer, no further call to the service.
      const again = await Promise.all(
        [1, 2, 3].map(() =>
          service.getWebhookActionAndData({ provider: 'nestjs-payments_sandbox', payload: hooks.bodies[0] }),
        ),
      );
      for (const a of again) expect(a).toEqual(action);
      expect(sandbox.verifyCalls(s.data.payment_id)).toBe(verifiesBefore + 1);

      const payment = await service.authorizePaymentSession(s.id, {});
      expect(payment.captured_at).toBeTruthy();
      const refunded = await service.refundPayment({ payment_id: payment.id, amount: new BigNumber('12.345') });
      expect(refunded.refunds).toHaveLength(1);
      expect(sandbox.getPayment(s.data.payment_id).state).toBe('refunded');

      // The same refund retried at the provider (same key, data as stored): nothing asked again.
      const provider = service.paymentProviderService_.retrieveProvider(PROVIDER);
      const stored = (await service.retrievePayment(payment.id, { select: ['data'] })).data;
      const calls = () => sandbox.requests.filter((r) => r.path === '/api/v2/refund_payment').length;
      const before = calls();
      const retried = await provider.refundPayment({
        amount: new BigNumber('12.345'),
        data: stored,
        context: { idempotency_key: stored.refund.key },
      });
      expect(retried.data.refund).toEqual(stored.refund);
      expect(calls()).toBe(before);
      // A second refund through Medusa is refused, and the service is not asked.
      await expect(service.refundPayment({ payment_id: payment.id, amount: 1 })).rejects.toThrow();
      expect(calls()).toBe(before);
      // A retry with a new key and data that missed the first refund (Medusa failed to record it):
      // the provider's own record answers the first refund, and the service is not asked again.
      const stale = without(stored, 'refund');
      const recovered = await provider.refundPayment({
        amount: '12.345',
        data: stale,
        context: { idempotency_key: 'ref_other' },
      });
      expect(recovered.data.refund.refund_id).toBe(stored.refund.refund_id);
      expect(calls()).toBe(before);
      expect(
        sandbox.payments().filter((p) => p.paymentId === s.data.payment_id && p.state === 'refunded'),
      ).toHaveLength(1);
    });

    it("the card (brand, masked number, approval code) is on the payment's data, never its whole number", async () => {
      const s = await session(15);
      await sandbox.completePayment(s.data.payment_id);
      const payment = await service.authorizePaymentSession(s.id, {});
      const data = (await service.retrievePayment(payment.id, { select: ['data'] })).data;
      expect({ brand: data.card_brand, pan: data.masked_pan, approval: data.approval_code }).toEqual({
        brand: 'VISA',
        pan: '450921**1119',
        approval: sandbox.getPayment(s.data.payment_id).approvalCode,
      });
      // The ids (hex) may hold twelve decimal digits in a row by chance: the rest may not.
      const rest = { ...data };
      for (const id of ['payment_id', 'session_id', 'link']) delete rest[id];
      expect(JSON.stringify(rest)).not.toMatch(/\d{12,}/);

      const held = await session(9, PREAUTH);
      await sandbox.completePayment(held.data.payment_id);
      const heldPayment = await service.authorizePaymentSession(held.id, {});
      const heldData = (await service.retrievePayment(heldPayment.id, { select: ['data'] })).data;
      expect(heldData.masked_pan).toBe('450921**1119');
      await service.cancelPayment(heldPayment.id);
    });

    it("the guide's per-order request: return URLs naming the cart, a shorter session; the amount stays", async () => {
      const collection = await service.createPaymentCollections({ currency_code: 'tnd', amount: 11 });
      const s = await service.createPaymentSession(collection.id, {
        provider_id: HOOKED,
        currency_code: 'tnd',
        amount: 11,
        data: { cart_id: 'cart_01HOOKED' },
      });
      const sent = sandbox.getPayment(s.data.payment_id);
      expect(sent.successLink).toBe(`${process.env.STOREFRONT_URL}/checkout/paid?cart=cart_01HOOKED`);
      expect(sent.failLink).toBe(`${process.env.STOREFRONT_URL}/checkout/failed?cart=cart_01HOOKED`);
      expect(sent.sessionTimeoutSecs).toBe(900);
      expect(sent.amount).toBe('11000');
      expect(sent.developerTrackingId).toBe(s.id);
    });

    it("a restart between the link and the webhook: with the guide's store the new process settles it; with the memory store it cannot", async () => {
      const { NestjsPaymentsProvider } = require('nestjs-payments/medusa');
      process.env.DATABASE_URL = `postgres://${process.env.DB_USERNAME || 'postgres'}@${process.env.DB_HOST || 'localhost'}:${process.env.DB_PORT || '5432'}/${DB_NAME}`;
      // The guide's payments-store.js, loaded by each process (a new store on the same database).
      docModule('payments-store.js');
      const storeFile = path.join(__dirname, '..', 'payments-store.js');
      const processStore = () => {
        delete require.cache[require.resolve(storeFile)];
        return require(storeFile).store;
      };
      const first = new NestjsPaymentsProvider({}, options({ store: processStore() }));
      const { data } = await first.initiatePayment({
        amount: 8,
        currency_code: 'tnd',
        data: { session_id: 'payses_restart' },
        context: {},
      });
      // The process stops (abandoned, as a crash leaves it); the customer pays; the webhook reaches the next process.
      hooks.bodies.length = 0;
      await sandbox.completePayment(data.payment_id);
      const body = hooks.bodies.find((b) => JSON.stringify(b.data).includes(data.payment_id));
      const restarted = new NestjsPaymentsProvider({}, options({ store: processStore() }));
      expect(await restarted.getWebhookActionAndData(body)).toEqual({
        action: 'captured',
        data: { session_id: 'payses_restart', amount: '8.000' },
      });
      const withMemory = new NestjsPaymentsProvider({}, options({}));
      expect((await withMemory.getWebhookActionAndData(body)).action).toBe('not_supported');
      await Promise.all([first.client.close(), restarted.client.close(), withMemory.client.close()]);
    });

    it('a partial refund is refused, naming the whole amount', async () => {
      const s = await session(20);
      await sandbox.completePayment(s.data.payment_id);
      const payment = await service.authorizePaymentSession(s.id, {});
      await expect(service.refundPayment({ payment_id: payment.id, amount: 5 })).rejects.toThrow(
        /whole payments only: refund 20.000 TND/,
      );
      expect(sandbox.getPayment(s.data.payment_id).state).toBe('paid');
    });

    it('a declined payment is failed: webhook action failed, authorize refuses', async () => {
      const s = await session(7);
      hooks.bodies.length = 0;
      await sandbox.failPayment(s.data.payment_id);
      const action = await service.getWebhookActionAndData({
        provider: 'nestjs-payments_sandbox',
        payload: hooks.bodies[0],
      });
      expect(action.action).toBe('failed');
      await expect(service.authorizePaymentSession(s.id, {})).rejects.toThrow(/not authorized/);
      const refreshed = await service.retrievePaymentSession(s.id);
      expect(refreshed.status).toBe('error');
    });

    it('a body saying SUCCESS for a pending payment changes nothing (verify decides)', async () => {
      const s = await session(3);
      const forged = { data: { payment_id: s.data.payment_id, status: 'SUCCESS' }, rawData: '', headers: {} };
      const action = await service.getWebhookActionAndData({ provider: 'nestjs-payments_sandbox', payload: forged });
      expect(action.action).toBe('pending');
      const unknown = await service.getWebhookActionAndData({
        provider: 'nestjs-payments_sandbox',
        payload: { data: { payment_id: 'pay_stranger' }, rawData: '', headers: {} },
      });
      expect(unknown).toEqual({ action: 'not_supported' });
      expect(sandbox.verifyCalls('pay_stranger')).toBe(0);
    });

    it('pre-authorization: authorized, captured once, refund; another held then cancelled once', async () => {
      const s = await session(50, PREAUTH);
      expect(sandbox.getPayment(s.data.payment_id).kind).toBe('preauthorized');
      await sandbox.completePayment(s.data.payment_id);
      const payment = await service.authorizePaymentSession(s.id, {});
      expect(payment.captured_at).toBeFalsy();
      const captured = await service.capturePayment({ payment_id: payment.id });
      expect(captured.captured_at).toBeTruthy();
      expect(sandbox.getPayment(s.data.payment_id).state).toBe('captured');
      const provider = service.paymentProviderService_.retrieveProvider(PREAUTH);
      const data = (await service.retrievePayment(payment.id, { select: ['data'] })).data;
      const stale = without(data, 'captured');
      const again = await provider.capturePayment({ data: stale, context: { idempotency_key: 'capt_retry' } });
      expect(again.data.captured).toBeTruthy();

      const held = await session(30, PREAUTH);
      await sandbox.completePayment(held.data.payment_id);
      const heldPayment = await service.authorizePaymentSession(held.id, {});
      await service.cancelPayment(heldPayment.id);
      expect(sandbox.getPayment(held.data.payment_id).state).toBe('cancelled');
      const heldData = (await service.retrievePayment(heldPayment.id, { select: ['data'] })).data;
      const staleHeld = without(heldData, 'cancelled_at');
      await expect(provider.cancelPayment({ data: staleHeld, context: {} })).resolves.toBeTruthy();
    });

    it('refuses other currencies than TND with one clear line', async () => {
      const collection = await service.createPaymentCollections({ currency_code: 'eur', amount: 10 });
      await expect(
        service.createPaymentSession(collection.id, {
          provider_id: PROVIDER,
          currency_code: 'eur',
          amount: 10,
          data: {},
        }),
      ).rejects.toThrow(/TND only/);
    });
  },
});
