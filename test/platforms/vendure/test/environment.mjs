// Shared by the tests: a Vendure test server (sql.js or PostgreSQL) with the plugin, a
// PaymentsSandbox as the service, and the shop's checkout as a storefront does it.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { mergeConfig, EventBus, DefaultLogger, LogLevel, OrderPlacedEvent } from '@vendure/core';
import {
  createTestEnvironment,
  registerInitializer,
  SqljsInitializer,
  PostgresInitializer,
  MysqlInitializer,
  testConfig,
} from '@vendure/testing';
import { parse } from 'graphql';
import { PaymentsSandbox } from 'nestjs-payments/testing';
import { NestjsPaymentsUnexpectedPaymentEvent } from 'nestjs-payments/vendure';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/**
 * Vendure's MySQL initializer, its database named after the test file and this run
 * (VENDURE_RUN_ID, set by run.sh, which drops the run's databases at its end): runs beside it on
 * the shared server never meet.
 */
class RunMariadbInitializer extends MysqlInitializer {
  getDbNameFromFilename(filename) {
    return `${super.getDbNameFromFilename(filename)}_${process.env.VENDURE_RUN_ID ?? process.pid}`.slice(0, 64);
  }
}
export const gql = (text) => parse(text);

/** A snippet of docs/vendure.md (copied beside the tests by run.sh): the block after `<!-- test: name -->`. */
export function snippet(name) {
  const guide = readFileSync(path.join(HERE, '..', 'vendure.md'), 'utf8');
  const match = new RegExp(`<!-- test: ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(guide);
  if (!match) throw new Error(`docs/vendure.md has no snippet ${name}`);
  return match[1];
}
export const WEBHOOK_SECRET = 'vendure-test-webhook-secret-0123456789abcdef';

export const initialData = {
  defaultLanguage: 'en',
  defaultZone: 'Africa',
  taxRates: [{ name: 'Standard Tax', percentage: 19 }],
  shippingMethods: [{ name: 'Rapid Poste', price: 700 }],
  paymentMethods: [
    { name: 'card', handler: { code: 'nestjs-payments', arguments: [{ name: 'preAuthorization', value: 'false' }] } },
    {
      name: 'card-preauth',
      handler: { code: 'nestjs-payments', arguments: [{ name: 'preAuthorization', value: 'true' }] },
    },
  ],
  countries: [{ name: 'Tunisia', code: 'TN', zone: 'Africa' }],
  collections: [],
};

/**
 * The plugin exactly as the guide configures it, its environment variables pointing at the sandbox
 * (`sandbox`: its url and keys). `pluginOptions`: options set over the guide's, or a function of them.
 */
export async function guidePlugin(sandbox, port, proxyPort, baseUrl, pluginOptions, configSnippet = 'vendure-config') {
  Object.assign(process.env, {
    PAYMENTS_PUBLIC_KEY: sandbox.publicKey,
    PAYMENTS_PRIVATE_KEY: sandbox.privateKey,
    PAYMENTS_BASE_URL: baseUrl,
    SHOP_URL: sandbox.url,
    VENDURE_PUBLIC_URL: `http://127.0.0.1:${proxyPort}`,
    PAYMENTS_WEBHOOK_SECRET: WEBHOOK_SECRET,
  });
  const dir = path.join(HERE, '..', '.snippets');
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `vendure-config-${port}.mjs`);
  writeFileSync(file, snippet(configSnippet));
  // The snippet's one export: the plugin as configured.
  const [plugin] = Object.values(await import(file));
  if (typeof pluginOptions === 'function') return plugin.init(pluginOptions(plugin.options));
  return pluginOptions ? plugin.init({ ...plugin.options, ...pluginOptions }) : plugin;
}

/** The products' images (fixtures/products.csv) are read from the fixtures. */
export const IMPORT_OPTIONS = { importAssetsDir: path.join(HERE, '..', 'fixtures') };

/** What `TestServer.init()` fills a new database with. */
export const POPULATION = {
  initialData,
  productsCsvPath: path.join(HERE, '..', 'fixtures', 'products.csv'),
  customerCount: 1,
};

/**
 * Registers Vendure's initializer of `db` ('sqljs', 'postgres' or 'mariadb'), which makes the
 * database `TestServer.init()` populates; its connection options (undefined: testConfig's sql.js).
 */
export function testDatabase(db) {
  // The population's jobs (the product image, the search index) may still write when its server
  // stops: sql.js then saves a malformed file. A second lets them finish on a busy machine.
  if (db === 'sqljs') registerInitializer('sqljs', new SqljsInitializer(path.join(HERE, '..', '__data__'), 1000));
  else if (db === 'mariadb') registerInitializer('mariadb', new RunMariadbInitializer());
  else registerInitializer('postgres', new PostgresInitializer());
  if (db === 'postgres')
    return {
      type: 'postgres',
      host: '127.0.0.1',
      port: 5432,
      username: 'postgres',
      password: '',
      database: process.env.VENDURE_PG_DATABASE ?? 'vendure_np_test',
      schema: 'public',
      synchronize: true,
    };
  if (db === 'mariadb')
    return { type: 'mariadb', host: '127.0.0.1', port: 3306, username: 'root', password: '', synchronize: true };
  return undefined;
}

/**
 * Starts the environment. `db`: 'sqljs', 'postgres' or 'mariadb'; `port`: Vendure's; `proxyPort`: the
 * webhooks' proxy (default port + 50); `logger`: Vendure's logger (default: errors only);
 * `plugins`: Vendure plugins to add after the guide's (e.g. Vendure's EmailPlugin); `config`: more
 * of Vendure's configuration, merged last; `secondAccount`: a second merchant account of the
 * service (`env.second`, its own keys), the service's one address (`env.serviceUrl`, port + 2)
 * answering each account by the keys a call carries; `pluginOptions`: options set over the guide's;
 * `configSnippet`: the guide's configuration snippet to run (default `vendure-config`).
 */
export async function startEnvironment({
  db = 'sqljs',
  port,
  proxyPort = port + 50,
  logger,
  plugins = [],
  config: more = {},
  secondAccount = false,
  pluginOptions,
  configSnippet = 'vendure-config',
}) {
  const sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
  const second = secondAccount
    ? await PaymentsSandbox.start({
        webhookAttempts: 1,
        publicKey: 'pk_second_account_0123456789',
        privateKey: 'sk_second_account_secret_0123456789abcdef',
      })
    : undefined;
  const accounts = second
    ? http.createServer((req, res) => {
        const target = new URL((req.headers.authorization ?? '').includes(second.publicKey) ? second.url : sandbox.url);
        const forward = http.request(
          { host: target.hostname, port: target.port, path: req.url, method: req.method, headers: req.headers },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, answer.headers);
            answer.pipe(res);
          },
        );
        forward.on('error', () => res.writeHead(502).end());
        req.pipe(forward);
      })
    : undefined;
  if (accounts) await new Promise((resolve) => accounts.listen(port + 2, '127.0.0.1', resolve));
  const serviceUrl = accounts ? `http://127.0.0.1:${port + 2}` : sandbox.url;
  // The service reaches Vendure through this loopback proxy, which a test can close to the
  // webhooks (503) to see the return path alone.
  const proxy = { dropWebhooks: false };
  const proxyServer = http.createServer((req, res) => {
    if (proxy.dropWebhooks) return void res.writeHead(503).end();
    const forward = http.request(
      { host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forward.on('error', () => res.writeHead(502).end());
    req.pipe(forward);
  });
  await new Promise((resolve) => proxyServer.listen(proxyPort, '127.0.0.1', resolve));
  const dbConnectionOptions = testDatabase(db);
  const base = mergeConfig(testConfig, {
    apiOptions: { port },
    importExportOptions: IMPORT_OPTIONS,
    logger: logger ?? new DefaultLogger({ level: process.env.VENDURE_LOG ? LogLevel.Verbose : LogLevel.Error }),
    ...(dbConnectionOptions ? { dbConnectionOptions } : {}),
    plugins: [await guidePlugin(sandbox, port, proxyPort, serviceUrl, pluginOptions, configSnippet), ...plugins],
  });
  const config = mergeConfig(base, more);
  const { server, adminClient, shopClient } = createTestEnvironment(config);
  try {
    await server.init(POPULATION);
  } catch (error) {
    await sandbox.close();
    await second?.close();
    accounts?.close();
    proxyServer.close();
    throw error;
  }
  await adminClient.asSuperAdmin();
  // The service takes dinars: the default channel sells in TND (its prices are moved to TND).
  await adminClient.query(
    gql(
      `mutation { updateChannel(input: { id: "T_1", defaultCurrencyCode: TND, availableCurrencyCodes: [TND] }) { ... on Channel { id defaultCurrencyCode } } }`,
    ),
  );
  // The codes initialData gave the two PaymentMethods, by their pre-authorization argument.
  const { paymentMethods } = await adminClient.query(
    gql(`{ paymentMethods { items { code handler { args { name value } } } } }`),
  );
  const preauth = (m) => m.handler.args.some((a) => a.name === 'preAuthorization' && a.value === 'true');
  const methods = {
    card: paymentMethods.items.find((m) => !preauth(m)).code,
    preauth: paymentMethods.items.find(preauth).code,
  };
  const unexpected = [];
  server.app
    .get(EventBus)
    .ofType(NestjsPaymentsUnexpectedPaymentEvent)
    .subscribe((event) => unexpected.push(event));
  // A subscriber that does what Vendure's EmailPlugin does for the order confirmation (its asset
  // URLs are made absolute from `ctx.req`'s headers): what it saw, per order code.
  const placed = new Map();
  server.app
    .get(EventBus)
    .ofType(OrderPlacedEvent)
    .subscribe((event) => {
      try {
        placed.set(event.order.code, {
          host: event.ctx.req.headers.host,
          channelToken: event.ctx.channel.token,
          apiType: event.ctx.apiType,
        });
      } catch (error) {
        placed.set(event.order.code, { error: error.message });
      }
    });
  return {
    server,
    adminClient,
    shopClient,
    sandbox,
    second,
    serviceUrl,
    unexpected,
    placed,
    proxy,
    methods,
    async close() {
      await server.destroy();
      await sandbox.close();
      await second?.close();
      if (accounts) await new Promise((resolve) => accounts.close(resolve));
      await new Promise((resolve) => proxyServer.close(resolve));
    },
  };
}

export const ORDER_FIELDS = `id code state totalWithTax currencyCode payments { id state amount transactionId method refunds { id state total metadata } }`;

/** A guest's cart up to shipping, as a storefront builds it; returns the active order. */
export async function cartWithShipping(shopClient, { variantId = 'T_1', quantity = 1 } = {}) {
  await shopClient.asAnonymousUser();
  await shopClient.query(
    gql(
      `mutation($id: ID!, $q: Int!) { addItemToOrder(productVariantId: $id, quantity: $q) { ... on Order { id } ... on ErrorResult { message } } }`,
    ),
    {
      id: variantId,
      q: quantity,
    },
  );
  await shopClient.query(
    gql(
      `mutation { setCustomerForOrder(input: { emailAddress: "amel${Date.now()}${Math.random()}@example.tn", firstName: "Amel", lastName: "Ben Ali" }) { ... on Order { id } ... on ErrorResult { message } } }`,
    ),
  );
  await shopClient.query(
    gql(
      `mutation { setOrderShippingAddress(input: { streetLine1: "12 Rue de Marseille", city: "Tunis", postalCode: "1000", countryCode: "TN" }) { ... on Order { id } ... on ErrorResult { message } } }`,
    ),
  );
  const { eligibleShippingMethods } = await shopClient.query(gql(`{ eligibleShippingMethods { id } }`));
  const { setOrderShippingMethod } = await shopClient.query(
    gql(
      `mutation($ids: [ID!]!) { setOrderShippingMethod(shippingMethodId: $ids) { ... on Order { ${ORDER_FIELDS} } ... on ErrorResult { message } } }`,
    ),
    {
      ids: [eligibleShippingMethods[0].id],
    },
  );
  return setOrderShippingMethod;
}

/** The shop mutation a storefront calls for the payment link. */
export async function paymentLink(shopClient, input = {}) {
  const { createNestjsPaymentsLink } = await shopClient.query(
    gql(
      `mutation($input: NestjsPaymentsLinkInput) { createNestjsPaymentsLink(input: $input) { paymentId link millimes } }`,
    ),
    { input },
  );
  return createNestjsPaymentsLink;
}

/** The order as the Admin API shows it. */
export async function adminOrder(adminClient, id) {
  const { order } = await adminClient.query(gql(`query($id: ID!) { order(id: $id) { ${ORDER_FIELDS} } }`), { id });
  return order;
}
