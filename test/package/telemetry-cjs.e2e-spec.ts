/**
 * The published CommonJS build finds `@opentelemetry/api` synchronously (a `require` inside a
 * try/catch, lib/core/telemetry/), so the very first call of a client is traced. Checked
 * on the real build: `npm run build` in a temporary copy of the package (the shared dist/ is left
 * alone), then a plain `node` process (CommonJS, no test runner) that registers the SDK as an app
 * would, requires dist/index.cjs and makes one call.
 */
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { cp, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { FakeService } from '../support/fake-service.js';
import { verifyAnswer, verifyPath } from '../support/verify-answers.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

let copy: string;
let fake: FakeService;

beforeAll(async () => {
  fake = await FakeService.start();
  copy = await mkdtemp(path.join(tmpdir(), 'nestjs-payments-cjs-'));
  for (const file of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'lib', 'scripts'])
    await cp(path.join(ROOT, file), path.join(copy, file), { recursive: true });
  await symlink(path.join(ROOT, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
  await run('npm', ['run', '--silent', 'build'], { cwd: copy, timeout: 240_000 });
}, 300_000);

afterAll(async () => {
  await fake.close();
  if (copy) await rm(copy, { recursive: true, force: true });
});

/** The app: SDK registered first, then the package required, then one call. */
const APP = `
const { trace, metrics } = require('@opentelemetry/api');
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base');
const { AggregationTemporality, MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics');
class Reader extends MetricReader {
  constructor() { super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE }); }
  onForceFlush() { return Promise.resolve(); }
  onShutdown() { return Promise.resolve(); }
}
const spans = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
const reader = new Reader();
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

const entry = require.resolve('nestjs-payments');
const { PaymentsClient } = require('nestjs-payments');
(async () => {
  const client = new PaymentsClient({ publicKey: 'pk_cjs', privateKey: 'sk_cjs_private', baseUrl: process.argv[2], reconciliation: { enabled: false } });
  const verified = await client.verifyPayment('pay_first');
  const { resourceMetrics } = await reader.collect();
  const histograms = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).filter((m) => m.dataPoints.some((p) => typeof p.value === 'object'));
  const points = histograms.map((m) => ({ name: m.descriptor.name, count: m.dataPoints.reduce((n, p) => n + p.value.count, 0) }));
  await client.close();
  console.log(JSON.stringify({
    entry,
    status: verified.status,
    spans: spans.getFinishedSpans().map((s) => ({ name: s.name, operation: s.attributes['payments.operation'] })),
    points,
  }));
})().catch((error) => { console.error(error); process.exit(1); });
`;

it('the first call of a client loaded with require() is traced and measured', async () => {
  fake.always(verifyPath('pay_first'), { status: 200, body: verifyAnswer({ status: 'SUCCESS' }) });
  const app = path.join(copy, 'app.cjs');
  await writeFile(app, APP);
  // require('nestjs-payments') from inside the copy: Node resolves a package's own name through its "exports".
  const { stdout } = await run(process.execPath, [app, fake.url], { cwd: copy, timeout: 60_000 });
  const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as {
    entry: string;
    status: string;
    spans: Array<{ name: string; operation: string }>;
    points: Array<{ name: string; count: number }>;
  };
  expect(path.relative(copy, result.entry)).toBe(path.join('dist', 'index.cjs'));
  expect(result.status).toBe('SUCCESS');
  expect(result.spans).toEqual([{ name: 'payments verifyPayment', operation: 'verifyPayment' }]);
  expect(result.points).toEqual([{ name: 'payments.client.operation.duration', count: 1 }]);
}, 120_000);
