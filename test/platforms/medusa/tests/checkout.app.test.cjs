/* global jest, it, expect, beforeAll, afterAll */
// The provider in a whole Medusa application (medusaIntegrationTestRunner: HTTP server, workflows,
// event bus, PostgreSQL), configured with docs/medusa.md's medusa-config.js and its shared store,
// the sandbox as the service: a cart and a payment session over the store API (the guide's
// storefront calls), the customer pays on the sandbox, whose
// webhook reaches /hooks/payment/nestjs-payments_tn; one order, however many duplicates; a
// refund retried changes nothing.
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { medusaIntegrationTestRunner } = require('@medusajs/test-utils');
const { ContainerRegistrationKeys, Modules } = require('@medusajs/framework/utils');
const {
  createApiKeysWorkflow,
  createProductsWorkflow,
  createRegionsWorkflow,
  createSalesChannelsWorkflow,
  linkSalesChannelsToApiKeyWorkflow,
  refundPaymentWorkflow,
} = require('@medusajs/core-flows');
const { PaymentsSandbox, SANDBOX_PUBLIC_KEY, SANDBOX_PRIVATE_KEY } = require('nestjs-payments/testing');

// Medusa's app runner migrates every module before the first test: over 2 minutes on a busy machine.
jest.setTimeout(300_000);

// Ports (the platforms range 28420-28449, below Linux's outgoing ports): the app, the sandbox the
// config points at, and the `medusa start` server of the restart test.
const APP_PORT = 28430;
const SANDBOX_PORT = 28431;
const SERVER_PORT = 28432;
const DB_NAME = `nestjs_payments_medusa_app_${process.pid}`;
const APP = path.join(__dirname, '..', 'app');

/** The js blocks of docs/medusa.md marked as run here, by the file name on their first line. */
function docSnippet(file) {
  const guide = fs.readFileSync(path.join(__dirname, '..', 'docs', 'medusa.md'), 'utf8');
  for (const match of guide.matchAll(/<!-- verified-by: test\/platforms\/medusa -->\n\n```js\n([\s\S]*?)^```$/gm)) {
    if (match[1].startsWith(`// file: ${file}\n`)) return match[1];
  }
  throw new Error(`docs/medusa.md has no snippet ${file}`);
}

// The application folder: the guide's config and its store, verbatim.
fs.mkdirSync(APP, { recursive: true });
fs.writeFileSync(path.join(APP, 'medusa-config.js'), docSnippet('medusa-config.js'));
fs.writeFileSync(path.join(APP, 'payments-store.js'), docSnippet('payments-store.js'));
fs.writeFileSync(path.join(APP, 'storefront.js'), docSnippet('storefront.js'));

// The restart test's server folder: `medusa start` runs in it. Its medusa-config.js is the guide's,
// with Medusa's admin off as Medusa's own test runner turns it off (serving the admin takes a
// `medusa build` of minutes; nothing here uses it); Medusa's CLI wants a package.json naming Medusa.
const SERVER = path.join(APP, 'server');
fs.mkdirSync(SERVER, { recursive: true });
fs.writeFileSync(
  path.join(SERVER, 'package.json'),
  JSON.stringify({ name: 'medusa-server', private: true, dependencies: { '@medusajs/medusa': '2.21.2' } }),
);
fs.writeFileSync(
  path.join(SERVER, 'medusa-config.js'),
  "const config = require('../medusa-config.js');\n" +
    'config.admin = { ...config.admin, disable: true };\n' +
    'module.exports = config;\n',
);

/**
 * A Medusa server in its own OS process, as a merchant runs one: Medusa's CLI `medusa start`
 * (NODE_ENV=production) on the test's database, the guide's configuration, port SERVER_PORT.
 * Resolves once its /health answers; its output goes to medusa-<name>.log beside the tests.
 */
async function startMedusa(name) {
  const logFile = path.join(__dirname, '..', `medusa-${name}.log`);
  const out = fs.openSync(logFile, 'w');
  const cli = path.join(__dirname, '..', 'node_modules', '@medusajs', 'cli', 'cli.js');
  const child = spawn(process.execPath, [cli, 'start', '--port', String(SERVER_PORT)], {
    cwd: SERVER,
    env: {
      ...process.env,
      NODE_ENV: 'production',
      NODE_OPTIONS: '',
      PORT: String(SERVER_PORT),
      MEDUSA_BACKEND_URL: `http://127.0.0.1:${SERVER_PORT}`,
    },
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)));
  const log = () => fs.readFileSync(logFile, 'utf8');
  const server = {
    log,
    /** Kills the process as a crash or an OOM kill does (SIGKILL: no shutdown hook runs), and waits for it. */
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
  for (const end = Date.now() + 240_000; Date.now() < end; await new Promise((r) => setTimeout(r, 500))) {
    if (child.exitCode !== null)
      throw new Error(`medusa start (${name}) exited ${child.exitCode}:\n${log().slice(-3000)}`);
    const ok = await fetch(`http://127.0.0.1:${SERVER_PORT}/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) return server;
  }
  await server.kill();
  throw new Error(`medusa start (${name}) did not answer /health in 240 s:\n${log().slice(-3000)}`);
}

let sandbox;
beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ port: SANDBOX_PORT });
});
afterAll(async () => {
  await sandbox?.close();
});

// Medusa reads medusa-config.js before the runner applies its `env`: the guide's variables go first.
const dbUrl = `postgres://${process.env.DB_USERNAME || 'postgres'}@${process.env.DB_HOST || 'localhost'}:${process.env.DB_PORT || '5432'}/${DB_NAME}`;

Object.assign(process.env, {
  PORT: String(APP_PORT),
  DATABASE_URL: dbUrl,
  MEDUSA_BACKEND_URL: `http://127.0.0.1:${APP_PORT}`,
  STOREFRONT_URL: 'http://127.0.0.1:8000',
  PAYMENTS_PUBLIC_KEY: SANDBOX_PUBLIC_KEY,
  PAYMENTS_PRIVATE_KEY: SANDBOX_PRIVATE_KEY,
  PAYMENTS_BASE_URL: `http://127.0.0.1:${SANDBOX_PORT}`,
});

medusaIntegrationTestRunner({
  cwd: APP,
  dbName: DB_NAME,
  testSuite: ({ getContainer, api }) => {
    const until = async (what, check, ms = 60_000) => {
      for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 250))) {
        const value = await check();
        if (value) return value;
      }
      throw new Error(`timed out waiting for ${what}`);
    };

    // The store makes its tables on first use, once per process. Made here, before the runner's
    // snapshot of the database that every test starts from, every test finds them.
    beforeAll(async () => {
      const payments = getContainer().resolve(Modules.PAYMENT);
      await payments.paymentProviderService_
        .retrieveProvider('pp_nestjs-payments_tn')
        .client.store.findPending('pay_none');
    });

    /** The shop: a TND region with the provider, a sales channel, its publishable key, a product. */
    const setUpShop = async (container) => {
      const provider = 'pp_nestjs-payments_tn';
      // The shop: a TND region with the provider, a sales channel, its publishable key, a product.
      const {
        result: [region],
      } = await createRegionsWorkflow(container).run({
        input: {
          regions: [{ name: 'Tunisia', currency_code: 'tnd', countries: ['tn'], payment_providers: [provider] }],
        },
      });
      const {
        result: [channel],
      } = await createSalesChannelsWorkflow(container).run({ input: { salesChannelsData: [{ name: 'Web' }] } });
      const {
        result: [key],
      } = await createApiKeysWorkflow(container).run({
        input: { api_keys: [{ title: 'storefront', type: 'publishable', created_by: '' }] },
      });
      await linkSalesChannelsToApiKeyWorkflow(container).run({ input: { id: key.id, add: [channel.id] } });
      const {
        result: [product],
      } = await createProductsWorkflow(container).run({
        input: {
          products: [
            {
              title: 'Chechia',
              status: 'published',
              options: [{ title: 'Size', values: ['One'] }],
              variants: [
                {
                  title: 'One',
                  options: { Size: 'One' },
                  manage_inventory: false,
                  prices: [{ amount: 12.345, currency_code: 'tnd' }],
                },
              ],
              sales_channels: [{ id: channel.id }],
            },
          ],
        },
      });
      return { region, key, product };
    };

    it("the guide's main config gives the provider the PostgreSQL store (a restart keeps its payments)", () => {
      const config = require(path.join(APP, 'medusa-config.js'));
      // defineConfig keys the modules by name; a config without it lists them.
      const payment = Array.isArray(config.modules)
        ? config.modules.find((m) => m.resolve === '@medusajs/medusa/payment')
        : config.modules.payment;
      const { PostgresPaymentsStore } = require('nestjs-payments/postgres');
      expect(payment.options.providers[0].options.store).toBeInstanceOf(PostgresPaymentsStore);
    });

    it('cart -> session -> paid on the sandbox -> webhook -> one order; duplicates and a refund retry change nothing', async () => {
      const container = getContainer();
      const query = container.resolve(ContainerRegistrationKeys.QUERY);
      const { region, key, product } = await setUpShop(container);

      // The storefront: a cart over the store API, then the guide's two calls.
      const storefront = require(path.join(APP, 'storefront.js'));
      const backend = `http://127.0.0.1:${APP_PORT}`;
      const headers = { headers: { 'x-publishable-api-key': key.token } };
      const {
        data: { cart },
      } = await api.post(
        '/store/carts',
        {
          region_id: region.id,
          email: 'customer@example.com',
          items: [{ variant_id: product.variants[0].id, quantity: 1 }],
        },
        headers,
      );
      const link = await storefront.paymentLink(backend, key.token, cart.id);
      const paymentId = link.split('/').pop();
      expect(sandbox.getPayment(paymentId).amount).toBe('12345');
      // Not paid yet: the return page gets the cart back, no order.
      expect(await storefront.completeCheckout(backend, key.token, cart.id)).toMatchObject({ type: 'cart' });

      // The customer pays on the sandbox's checkout; the sandbox delivers the webhook to Medusa's route.
      const settlement = await sandbox.completePayment(paymentId);
      expect(settlement.webhook?.delivered ?? true).toBe(true);
      const ordersOf = async () =>
        (await query.graph({ entity: 'order_cart', fields: ['order_id'], filters: { cart_id: cart.id } })).data;
      const [placed] = await until('the order', async () => (await ordersOf()).length > 0 && (await ordersOf()));
      // The customer's return afterwards finds the order the webhook made.
      expect(await storefront.completeCheckout(backend, key.token, cart.id)).toMatchObject({
        type: 'order',
        order: { id: placed.order_id },
      });
      const verifies = sandbox.verifyCalls(paymentId);

      // Duplicates, concurrent, on the real route: still one order, no further verify call.
      const delivery = { payment_id: paymentId, status: 'SUCCESS' };
      const answers = await Promise.all(
        [1, 2, 3, 4, 5].map(() => api.post('/hooks/payment/nestjs-payments_tn', delivery)),
      );
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
      await new Promise((r) => setTimeout(r, 8_000)); // Medusa handles each delivery 5 s after it came
      expect(await ordersOf()).toHaveLength(1);
      expect(sandbox.verifyCalls(paymentId)).toBe(verifies);

      const {
        data: [order],
      } = await query.graph({
        entity: 'order',
        fields: ['id', 'payment_collections.payments.id', 'payment_collections.payments.captured_at'],
        filters: { id: link.order_id },
      });
      const payments = order.payment_collections.flatMap((c) => c.payments);
      expect(payments).toHaveLength(1);
      expect(payments[0].captured_at).toBeTruthy();

      // Refund, then the same refund again: Medusa refuses it, the service refunds once.
      await refundPaymentWorkflow(container).run({ input: { payment_id: payments[0].id, amount: 12.345 } });
      const again = await refundPaymentWorkflow(container).run({
        input: { payment_id: payments[0].id, amount: 12.345 },
        throwOnError: false,
      });
      expect(again.errors.map((e) => e.error?.message)).toEqual([
        expect.stringMatching(/more than the captured amount/),
      ]);
      expect(sandbox.getPayment(paymentId).state).toBe('refunded');
      expect(sandbox.requests.filter((r) => r.path === '/api/v2/refund_payment')).toHaveLength(1);
      const paymentModule = container.resolve(Modules.PAYMENT);
      const refunded = await paymentModule.retrievePayment(payments[0].id, { relations: ['refunds'] });
      expect(refunded.refunds).toHaveLength(1);
    });
    it("a whole Medusa restart between the link and the webhook (the guide's config, `medusa start` killed with SIGKILL): the webhook after it makes one order", async () => {
      const container = getContainer();
      const query = container.resolve(ContainerRegistrationKeys.QUERY);
      const { region, key, product } = await setUpShop(container);
      const storefront = require(path.join(APP, 'storefront.js'));
      const backend = `http://127.0.0.1:${SERVER_PORT}`;
      const servers = [];
      try {
        // The first server: the storefront makes the cart and the payment link there.
        servers.push(await startMedusa('first'));
        const made = await fetch(`${backend}/store/carts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-publishable-api-key': key.token },
          body: JSON.stringify({
            region_id: region.id,
            email: 'restart@example.com',
            items: [{ variant_id: product.variants[0].id, quantity: 1 }],
          }),
        });
        expect(made.status).toBe(200);
        const { cart } = await made.json();
        const paymentId = (await storefront.paymentLink(backend, key.token, cart.id)).split('/').pop();
        expect(sandbox.getPayment(paymentId)).toMatchObject({
          state: 'pending',
          webhook: `${backend}/hooks/payment/nestjs-payments_tn`,
        });

        // The server dies (SIGKILL: no shutdown hook), and a new process starts on the same database.
        expect(await servers[0].kill()).toBe('SIGKILL');
        servers.push(await startMedusa('second'));

        // The customer, who closed the tab, had paid: the webhook reaches the new process only.
        const settlement = await sandbox.completePayment(paymentId);
        expect(settlement.webhook?.delivered ?? true).toBe(true);
        const ordersOf = async () =>
          (await query.graph({ entity: 'order_cart', fields: ['order_id'], filters: { cart_id: cart.id } })).data;
        const [placed] = await until(
          'the order',
          async () => (await ordersOf()).length > 0 && (await ordersOf()),
          120_000,
        );
        const verifies = sandbox.verifyCalls(paymentId);

        // Redeliveries to the new process: still one order, one captured payment, no further verify.
        const answers = await Promise.all(
          [1, 2, 3].map(() =>
            fetch(`${backend}/hooks/payment/nestjs-payments_tn`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ payment_id: paymentId, status: 'SUCCESS' }),
            }).then((r) => r.status),
          ),
        );
        expect(answers).toEqual([200, 200, 200]);
        await new Promise((r) => setTimeout(r, 8_000)); // Medusa handles each delivery 5 s after it came
        expect(await ordersOf()).toHaveLength(1);
        expect(sandbox.verifyCalls(paymentId)).toBe(verifies);
        const {
          data: [order],
        } = await query.graph({
          entity: 'order',
          fields: ['id', 'payment_collections.payments.captured_at'],
          filters: { id: placed.order_id },
        });
        const payments = order.payment_collections.flatMap((c) => c.payments);
        expect(payments).toHaveLength(1);
        expect(payments[0].captured_at).toBeTruthy();
        // The customer's return, on the new process, finds the order.
        expect(await storefront.completeCheckout(backend, key.token, cart.id)).toMatchObject({
          type: 'order',
          order: { id: placed.order_id },
        });
        const said = servers[1].log();
        expect(said).not.toMatch(/does not know/);
        expect(said).not.toMatch(/in-memory store/);
      } finally {
        for (const server of servers) await server.kill();
      }
    }, 600_000);

    it('a declined card: the return gets the cart back, the retry a new link that the customer pays: one order', async () => {
      const container = getContainer();
      const query = container.resolve(ContainerRegistrationKeys.QUERY);
      const { region, key, product } = await setUpShop(container);
      const storefront = require(path.join(APP, 'storefront.js'));
      const backend = `http://127.0.0.1:${APP_PORT}`;
      const {
        data: { cart },
      } = await api.post(
        '/store/carts',
        {
          region_id: region.id,
          email: 'retry@example.com',
          items: [{ variant_id: product.variants[0].id, quantity: 1 }],
        },
        { headers: { 'x-publishable-api-key': key.token } },
      );
      const first = (await storefront.paymentLink(backend, key.token, cart.id)).split('/').pop();
      await sandbox.failPayment(first);
      expect(await storefront.completeCheckout(backend, key.token, cart.id)).toMatchObject({ type: 'cart' });
      // "Try again": a new session, a new payment (the declined one's checkout page answers 409).
      const retry = (await storefront.paymentLink(backend, key.token, cart.id)).split('/').pop();
      expect(retry).not.toBe(first);
      expect(sandbox.getPayment(retry).state).toBe('pending');
      await sandbox.completePayment(retry);
      const ordersOf = async () =>
        (await query.graph({ entity: 'order_cart', fields: ['order_id'], filters: { cart_id: cart.id } })).data;
      const [placed] = await until('the order', async () => (await ordersOf()).length > 0 && (await ordersOf()));
      expect(await storefront.completeCheckout(backend, key.token, cart.id)).toMatchObject({
        type: 'order',
        order: { id: placed.order_id },
      });
      expect(await ordersOf()).toHaveLength(1);
    });
  },
});
