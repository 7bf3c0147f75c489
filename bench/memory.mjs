// Memory of the webhook path under many distinct confirmations, with the in-memory store:
// drives client.webhooks.handle() directly (no HTTP), RSS and heap measured after global.gc().
// Run with --expose-gc by run.mjs.
import { MemoryPaymentsStore, PaymentsClient } from '../dist/index.js';
import { WebhookTokenSigner } from '../dist/core/webhook.token.js';

const [totalArg, capArg] = process.argv.slice(2);
const TOTAL = Number(totalArg ?? 200_000);
const CAP = capArg === 'default' ? undefined : Number(capArg);
const SECRET = 'bench-webhook-secret-0123456789abcdef-0123';
const CHECKPOINTS = [0.125, 0.25, 0.5, 0.75, 1].map((f) => Math.round(TOTAL * f));

if (typeof globalThis.gc !== 'function') throw new Error('run with --expose-gc');
const store = CAP === undefined ? new MemoryPaymentsStore() : new MemoryPaymentsStore({ maxBindings: CAP, maxEvents: CAP });
const client = new PaymentsClient({
  publicKey: 'pk_bench',
  privateKey: 'sk_bench_private',
  baseUrl: 'http://127.0.0.1:9',
  webhook: { publicUrl: 'http://127.0.0.1/payments/webhook', secret: SECRET },
  store,
});
const signer = new WebhookTokenSigner(SECRET);
const createdAt = new Date().toISOString();
let handled = 0;
const dispatch = async () => {
  handled++;
};

function snapshot(done) {
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  return { done, rssMiB: m.rss / 2 ** 20, heapUsedMiB: m.heapUsed / 2 ** 20, storeSize: store.size };
}

async function confirm(i) {
  const { token, nonce } = signer.issue();
  const paymentId = `pay_${i}`;
  await store.saveBinding(nonce, { paymentId, amount: '12500', developerTrackingId: `order-${i}`, createdAt }, 7 * 86_400_000);
  const answer = await client.webhooks.handle({ query: { webhook_token: token }, body: { payment_id: paymentId, status: 'completed' } }, dispatch);
  if (answer.status !== 200) throw new Error(`confirmation ${i} answered ${answer.status}`);
}

// Warm up on a separate range of ids, then start from a clean store.
for (let i = 0; i < 2000; i++) await confirm(-1 - i);
await store.close();
handled = 0;

const points = [snapshot(0)];
const started = process.hrtime.bigint();
for (let i = 0; i < TOTAL; i++) {
  await confirm(i);
  if (CHECKPOINTS.includes(i + 1)) points.push(snapshot(i + 1));
}
const seconds = Number(process.hrtime.bigint() - started) / 1e9;
process.send({ type: 'result', cap: CAP ?? 'default (100 000 + 100 000)', total: TOTAL, handled, seconds, points });
process.on('message', (m) => m?.type === 'stop' && process.exit(0));
