import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { bundleFixture } from '../support/bundle.js';

// The waits a call makes on its way (another tab's payment of the same order, a retry's
// back-off) keep the process of a script that awaits the call alive: a real `node` process, with
// nothing else holding its event loop. Housekeeping timers (sweeps, wakes) still never do.

const ROOT = path.resolve(import.meta.dirname, '../..');
const OUT_DIR = path.join(ROOT, 'node_modules/.cache/nestjs-payments-keep-alive-test', String(process.pid));
const BUNDLE = path.join(OUT_DIR, 'script.mjs');
const SECRET = 'whsec_keep_alive_0123456789abcdef012345';

let sandbox: PaymentsSandbox;

beforeAll(async () => {
  mkdirSync(OUT_DIR, { recursive: true });
  bundleFixture(path.join(import.meta.dirname, 'fixtures/script.ts'), BUNDLE);
  sandbox = await PaymentsSandbox.start();
}, 60_000);

afterAll(async () => {
  await sandbox?.close();
  rmSync(OUT_DIR, { recursive: true, force: true });
});

function runScript(mode: 'tabs' | 'back-off'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const { baseUrl, publicKey, privateKey } = sandbox.options();
  const child = spawn(process.execPath, [BUNDLE], {
    env: { ...process.env, MODE: mode, SERVICE_URL: baseUrl, PUBLIC_KEY: publicKey, PRIVATE_KEY: privateKey, SECRET },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

describe('a script that awaits its calls', () => {
  // Exit code 13 is Node's "unsettled top-level await": the loop emptied in the middle of a call.
  it('is not dropped while a call waits for another tab of the same order', async () => {
    const run = await runScript('tabs');
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({ paymentIds: 1 });
  }, 60_000);

  it('is not dropped while a call backs off after a 503', async () => {
    sandbox.fault('/api/v2/verify_payment/*', { status: 503, times: 1 });
    const run = await runScript('back-off');
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({ status: 'PENDING' });
    expect(sandbox.requests.filter((r) => r.path.startsWith('/api/v2/verify_payment/'))).toHaveLength(2);
  }, 60_000);
});
