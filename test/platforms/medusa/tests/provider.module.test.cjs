// The provider inside Medusa's payment module (moduleIntegrationTestRunner, real PostgreSQL),
// the sandbox as the service: initiate -> pay -> webhook -> authorize -> captured; refunds;
// pre-authorization; failure; pending; duplicates; the amount conversion.
/* global jest, it, expect, beforeAll, afterAll */
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

let sandbox;
let hooks;
const PROVIDER = 'pp_nestjs-payments_sandbox';
const PREAUTH = 'pp_nestjs-payments_preauth';

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

moduleIntegrationTestRunner({
  moduleName: Modules.PAYMENT,
  dbName: `nestjs_payments_medusa_module_${process.pid}`,
  cwd: path.dirname(require.resolve('@medusajs/payment/package.json')),
  moduleOptions: {
    providers: [
      { resolve: 'nestjs-payments/medusa', id: 'sandbox', options: options({}) },
      { resolve: 'nestjs-payments/medusa', id: 'preauth', options: options({ capture: false }) },
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
      // A retry with a new key and data that missed the first refund: the service refuses, once refunded stays once.
      const stale = without(stored, 'refund');
      await expect(
        provider.refundPayment({ amount: '12.345', data: stale, context: { idempotency_key: 'ref_other' } }),
      ).rejects.toThrow(/refuse/);
      expect(
        sandbox.payments().filter((p) => p.paymentId === s.data.payment_id && p.state === 'refunded'),
      ).toHaveLength(1);
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
