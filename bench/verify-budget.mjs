// Verify calls per settled payment: two instances of the plugin (two PaymentsClients, each with
// its own Redis connection and store object: what two app processes share is Redis only) receive,
// for the same payments and all at the same moment, the webhook (delivered to both instances), the
// customer's return (`reconcilePayment` on one of them) and reconciliation passes (on both). The
// stub (a separate process) counts verify_payment calls. Target: <= 1.1 per settled payment, each
// payment's handlers run once.
//
//   node verify-budget.mjs <stubUrl> <redisUrl> <payments>
import { RedisPaymentsStore } from '../dist/redis/index.js';
import { PaymentsClient } from '../dist/index.js';
import { WebhookTokenSigner } from '../dist/core/webhook/webhook.token.js';
import { Redis } from 'ioredis';

const [stubUrl, redisUrl, countArg] = process.argv.slice(2);
const N = Number(countArg ?? 300);
const SECRET = 'bench-webhook-secret-0123456789abcdef-0123';
const keyPrefix = `nestjs-payments-bench-budget:${process.pid}:`;
const connections = [
  new Redis(redisUrl, { maxRetriesPerRequest: 1 }),
  new Redis(redisUrl, { maxRetriesPerRequest: 1 }),
];
const runs = new Map();
const instances = connections.map((redis, i) => {
  const client = new PaymentsClient({
    publicKey: 'pk_bench',
    privateKey: 'sk_bench_private',
    baseUrl: stubUrl,
    webhook: { publicUrl: 'http://127.0.0.1/payments/webhook', secret: SECRET },
    reconciliation: { enabled: false, batchSize: 50 },
    telemetry: false,
    store: new RedisPaymentsStore(redis, { keyPrefix }),
    name: `instance${i}`,
  });
  client.setHandlers({
    handlersOf: (name) =>
      name === 'payment.confirmed'
        ? [(event) => void runs.set(event.paymentId, (runs.get(event.paymentId) ?? 0) + 1)]
        : [],
  });
  return client;
});

const askStub = async () => (await (await fetch(`${stubUrl}/__count`)).json()).verifies;

// Payments as generatePayment leaves them: a signed token bound to the payment, and the payment
// queued for reconciliation (due now: the session is taken as over).
const signer = new WebhookTokenSigner(SECRET);
const store = instances[0].store;
const createdAt = new Date().toISOString();
const payments = [];
for (let i = 0; i < N; i++) {
  const { token, claims } = signer.issue('12500', undefined, 3_600_000);
  const paymentId = `pay_budget_${process.pid}_${i}`;
  await store.saveBinding(claims.nonce, { paymentId, amount: '12500', createdAt }, 3_600_000);
  await store.schedulePending({ paymentId, amount: '12500', createdAt, checks: 0 }, Date.now() - 1000);
  payments.push({ paymentId, token });
}

const before = await askStub();
const started = performance.now();
let reconciling = true;
const reconcileLoop = async (client) => {
  let passes = 0;
  while (reconciling) {
    await client.runReconciliation(Date.now());
    passes++;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return passes;
};
const loops = instances.map(reconcileLoop);
const answers = { webhook: {}, return: {} };
const tally = (kind, key) => (answers[kind][key] = (answers[kind][key] ?? 0) + 1);
await Promise.all(
  payments.map(async ({ paymentId, token }, i) => {
    const delivery = { query: {}, body: { payment_id: paymentId }, pathToken: token };
    await Promise.all([
      instances[0].webhooks.handle(delivery).then((a) => tally('webhook', a.status)),
      instances[1].webhooks.handle(delivery).then((a) => tally('webhook', a.status)),
      instances[i % 2].reconcilePayment(paymentId).then(
        (r) => tally('return', r.outcome),
        (e) => tally('return', e.code ?? 'error'),
      ),
    ]);
  }),
);
// Until reconciliation has nothing left (what the webhooks and returns left pending or busy).
for (let i = 0; i < 200 && (await store.countPending()) > 0; i++)
  await new Promise((resolve) => setTimeout(resolve, 20));
reconciling = false;
const passes = await Promise.all(loops);
const seconds = (performance.now() - started) / 1000;
const verifies = (await askStub()) - before;
const settled = [...runs.keys()].length;
const handlerRuns = [...runs.values()].reduce((s, n) => s + n, 0);

process.send({
  type: 'result',
  payments: N,
  settled,
  handlerRuns,
  verifies,
  perSettled: verifies / settled,
  pendingLeft: await store.countPending(),
  reconciliationPasses: passes,
  answers,
  seconds,
});
process.on('message', async (m) => {
  if (m?.type !== 'stop') return;
  for (const c of instances) await c.close();
  let cursor = '0';
  do {
    const [next, keys] = await connections[0].scan(cursor, 'MATCH', `${keyPrefix}*`, 'COUNT', 5000);
    if (keys.length) await connections[0].del(...keys);
    cursor = next;
  } while (cursor !== '0');
  for (const r of connections) await r.quit();
  process.exit(0);
});
