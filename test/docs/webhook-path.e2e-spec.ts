/**
 * How much of lib each path that confirms a payment runs: the lib files V8's precise coverage sees
 * executed while a signed webhook, a return check (`reconcilePayment`) or a reconciliation pass
 * reaches the host's confirmed handler and answers, in a Nest app and in an Express app (the
 * sandbox's own files left out). A maintainer follows these files to get from the request to the
 * handler; the ceilings keep the paths from growing unnoticed (lower them as the paths get shorter).
 *
 * Two more properties are measured on the same runs. The settlement runner is entered once per
 * settle (each entry builds one `Attempt`, counted by the coverage's call counts). And no file runs that only a call
 * back up the core's layers could have entered: the front end enters the core through the client
 * (`payments.client.ts`) or, for a webhook, the webhook processor; every other file of those two
 * top layers running on a path would have been called from below (a closure over the client
 * handed down, say), since settlement and the layers under it import neither.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import express from 'express';
import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { Session } from 'node:inspector/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PaymentConfirmedEvent, PaymentsService as PaymentsServiceType } from '../../lib/index.js';
import type { PaymentsClient } from '../../lib/express/index.js';
import type { PaymentsSandbox as PaymentsSandboxType } from '../../lib/testing/index.js';
import { freePort } from '../support/ports.js';

/**
 * The scripts loaded in this Jest worker before this file's own lib: earlier test files' module
 * instances, whose leftover timers or connections may run while a path is measured (seen in CI: an
 * earlier file's Redis store ran during the return check). Each file has lib instances of its own,
 * with their own script ids; only those loaded after this set is taken are counted. So lib is
 * imported below, after it, and never statically.
 */
async function loadedScripts(): Promise<Set<string>> {
  const session = new Session();
  session.connect();
  const ids = new Set<string>();
  session.on('Debugger.scriptParsed', (message) => ids.add(message.params.scriptId));
  try {
    // Enabling the debugger reports every script already loaded.
    await session.post('Debugger.enable');
    await session.post('Debugger.disable');
  } finally {
    session.disconnect();
  }
  return ids;
}
const EARLIER_SCRIPTS = await loadedScripts();
const { OnPaymentConfirmed, PaymentsModule, PaymentsService } = await import('../../lib/index.js');
const { createPaymentsClient, createWebhookRouter } = await import('../../lib/express/index.js');
const { PaymentsSandbox } = await import('../../lib/testing/index.js');
type PaymentsSandbox = PaymentsSandboxType;
type PaymentsService = PaymentsServiceType;

const LIB = join(import.meta.dirname, '../../lib');

// Each path also runs the payment's story (settlement.story, story.log: the desk's
// timeline, kept by default): two files more than the path without it.

/** The most lib files one paid webhook may run, from the route to the handler and back. */
const WEBHOOK_FILES_CEILING = 26;
/** The most lib files one return check (`reconcilePayment`) of a paid payment may run. */
const RETURN_FILES_CEILING = 26;
/** The most lib files one reconciliation pass confirming one paid payment may run. */
const RECONCILIATION_FILES_CEILING = 26;

/** The core's layers, bottom first, as lint enforces them (eslint.config.js's CORE_LAYERS). */
const CORE_LAYERS: string[] = JSON.parse(
  (
    /const CORE_LAYERS = (\[[^\]]*\])/.exec(readFileSync(join(LIB, '../eslint.config.js'), 'utf8'))?.[1] ?? '[]'
  ).replace(/'/g, '"'),
);

/** Where the session ends: the reconciliation pass finds the payment overdue only after it. */
const AFTER_SESSION_MS = (1200 + 60 + 1) * 1000;

/** What one measured run of lib did. */
interface LibRun {
  /** The lib files (outside the sandbox) with a function that ran, lib-relative, sorted. */
  files: string[];
  /** How many times the settlement runner was entered (settle or hold: an `Attempt` built). */
  runnerEntries: number;
}

/** What lib ran while `work` did. */
async function libRunOf(work: () => Promise<void>): Promise<LibRun> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    // Taking the coverage resets its counts: what the next take sees ran during `work`.
    await session.post('Profiler.takePreciseCoverage');
    await work();
    const { result } = await session.post('Profiler.takePreciseCoverage');
    await session.post('Profiler.stopPreciseCoverage');
    const files: string[] = [];
    let runnerEntries = 0;
    for (const script of result) {
      const path = script.url.startsWith('file:') ? fileURLToPath(script.url) : script.url;
      if (!path.startsWith(LIB) || EARLIER_SCRIPTS.has(script.scriptId)) continue;
      const file = relative(LIB, path);
      if (file.startsWith('testing/') || !script.functions.some((f) => f.ranges[0].count > 0)) continue;
      files.push(file);
      // Each entry of the runner (settle, hold) builds one Attempt: constructions are entries. (An
      // async function's count would also count its resumptions after each await.)
      if (file === 'core/settlement/settlement.attempt.ts')
        for (const f of script.functions) if (f.functionName === 'Attempt') runnerEntries += f.ranges[0].count;
    }
    return { files: files.sort(), runnerEntries };
  } finally {
    session.disconnect();
  }
}

/** The layer of a lib file: its core folder's place in CORE_LAYERS; a front end's (outside the core) above them all. */
function layerOf(file: string): number {
  const folder = /^core\/([^/]+)\//.exec(file)?.[1];
  return folder === undefined ? CORE_LAYERS.length : CORE_LAYERS.indexOf(folder);
}

/**
 * The files of a run that only a call back up could have entered: files of the core's top two
 * layers (client, webhook) other than the path's front door. The host and the front end enter the
 * core through `payments.client.ts`; a webhook then through the processor, whose own folder
 * (token, payload, answers, registrations) it calls sideways.
 */
function enteredFromBelow(files: string[], door: 'client' | 'webhook'): string[] {
  const settlement = CORE_LAYERS.indexOf('settlement');
  return files.filter((file) => {
    const layer = layerOf(file);
    if (layer <= settlement || layer === CORE_LAYERS.length) return false;
    if (file === 'core/client/payments.client.ts') return false;
    return !(door === 'webhook' && file.startsWith('core/webhook/'));
  });
}

function report(path: string, run: LibRun): void {
  process.stdout.write(`${path} ran ${run.files.length} lib files:\n  ${run.files.join('\n  ')}\n`);
}

/** What every measured path asserts: its files, the runner entered once, nothing entered from below. */
function expectPath(run: LibRun, door: 'client' | 'webhook', ceiling: number, required: string[]): void {
  expect(run.files).toEqual(expect.arrayContaining(['core/settlement/settlement.runner.ts', ...required]));
  expect(run.runnerEntries).toBe(1);
  expect(enteredFromBelow(run.files, door)).toEqual([]);
  expect(run.files.length).toBeLessThanOrEqual(ceiling);
}

it('reads the core layers from eslint.config.js', () => {
  expect(CORE_LAYERS).toEqual(expect.arrayContaining(['time', 'store', 'api', 'settlement', 'webhook', 'client']));
  expect(CORE_LAYERS.at(-1)).toBe('client');
  expect(layerOf('core/settlement/settlement.runner.ts')).toBeLessThan(layerOf('core/client/payments.api.ts'));
  // The check catches what it is there for: the client's operations run below the client.
  expect(enteredFromBelow(['core/client/payments.api.ts', 'core/client/payments.client.ts'], 'client')).toEqual([
    'core/client/payments.api.ts',
  ]);
});

@Injectable()
class Orders {
  readonly paid: string[] = [];
  @OnPaymentConfirmed()
  markPaid(event: PaymentConfirmedEvent) {
    this.paid.push(event.paymentId);
  }
}

describe('the lib files each confirming path runs (Nest)', () => {
  let sandbox: PaymentsSandbox;
  let app: INestApplication;
  let quiet: INestApplication;
  let payments: PaymentsService;
  let unhooked: PaymentsService;

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start();
    // The webhook's public URL names the app's own port, so a free port is picked first.
    const port = await freePort();
    const hooked = await Test.createTestingModule({
      imports: [
        PaymentsModule.forRoot(
          sandbox.options({
            webhook: {
              publicUrl: `http://127.0.0.1:${port}/payments/webhook`,
              secret: 'webhook-path-secret-0123456789abcdef',
            },
          }),
        ),
      ],
      providers: [Orders],
    }).compile();
    app = hooked.createNestApplication({ logger: false });
    await app.listen(port, '127.0.0.1');
    payments = app.get(PaymentsService);
    // Payments of an app without a webhook are settled by the return check or by reconciliation only.
    const unhookedModule = await Test.createTestingModule({
      imports: [PaymentsModule.forRoot(sandbox.options())],
      providers: [Orders],
    }).compile();
    quiet = unhookedModule.createNestApplication({ logger: false });
    await quiet.init();
    unhooked = quiet.get(PaymentsService);
    // A first payment by each path, so that what runs once per process (loading, first measurements) is not counted.
    const first = await payments.generatePayment({ amount: '1000', developerTrackingId: 'order-warm' });
    await sandbox.completePayment(first.paymentId);
    const returned = await unhooked.generatePayment({ amount: '1000', developerTrackingId: 'order-warm-return' });
    await sandbox.completePayment(returned.paymentId);
    await unhooked.reconcilePayment(returned.paymentId);
    const swept = await unhooked.generatePayment({ amount: '1000', developerTrackingId: 'order-warm-sweep' });
    await sandbox.completePayment(swept.paymentId);
    await unhooked.runReconciliation(Date.now() + AFTER_SESSION_MS);
  });

  afterAll(async () => {
    await app?.close();
    await quiet?.close();
    await sandbox?.close();
  });

  it(`a signed webhook runs at most ${WEBHOOK_FILES_CEILING} lib files, from the Nest route through the core to the handler`, async () => {
    const { paymentId } = await payments.generatePayment({ amount: '12500', developerTrackingId: 'order-path' });
    const run = await libRunOf(async () => {
      const settlement = await sandbox.completePayment(paymentId);
      expect(settlement.webhook).toMatchObject({ status: 200, delivered: true });
    });
    report('a signed webhook (Nest)', run);
    expect(app.get(Orders).paid).toContain(paymentId);
    expectPath(run, 'webhook', WEBHOOK_FILES_CEILING, [
      'nest/webhook.controller.ts',
      'core/webhook/webhook.processor.ts',
      'nest/payments.events-bridge.ts',
    ]);
  });

  it(`the return check runs at most ${RETURN_FILES_CEILING} lib files, from PaymentsService to the handler`, async () => {
    const { paymentId } = await unhooked.generatePayment({ amount: '12500', developerTrackingId: 'order-return' });
    await sandbox.completePayment(paymentId);
    const run = await libRunOf(async () => {
      expect(await unhooked.reconcilePayment(paymentId)).toMatchObject({ outcome: 'confirmed', handled: true });
    });
    report('a return check (Nest)', run);
    expect(quiet.get(Orders).paid).toContain(paymentId);
    expectPath(run, 'client', RETURN_FILES_CEILING, [
      'core/settlement/settlement.reconciler.ts',
      'nest/payments.events-bridge.ts',
    ]);
  });

  it(`a reconciliation pass runs at most ${RECONCILIATION_FILES_CEILING} lib files, from PaymentsService to the handler`, async () => {
    const { paymentId } = await unhooked.generatePayment({ amount: '12500', developerTrackingId: 'order-sweep' });
    await sandbox.completePayment(paymentId);
    const run = await libRunOf(async () => {
      expect(await unhooked.runReconciliation(Date.now() + AFTER_SESSION_MS)).toMatchObject({ checked: 1, settled: 1 });
    });
    report('a reconciliation pass (Nest)', run);
    expect(quiet.get(Orders).paid).toContain(paymentId);
    expectPath(run, 'client', RECONCILIATION_FILES_CEILING, [
      'core/settlement/reconciliation.scheduler.ts',
      'nest/payments.events-bridge.ts',
    ]);
  });
});

describe('the lib files each confirming path runs (Express)', () => {
  let sandbox: PaymentsSandbox;
  let server: Server;
  let hooked: PaymentsClient;
  let unhooked: PaymentsClient;
  const paid: string[] = [];

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start();
    const port = await freePort();
    hooked = createPaymentsClient(
      sandbox.options({
        webhook: { publicUrl: `http://127.0.0.1:${port}/hooks/pay`, secret: 'webhook-path-secret-0123456789abcdef' },
      }),
    );
    unhooked = createPaymentsClient(sandbox.options());
    const onPaymentConfirmed = (event: PaymentConfirmedEvent) => void paid.push(event.paymentId);
    const app = express();
    app.use('/hooks/pay', createWebhookRouter({ client: hooked, onPaymentConfirmed }));
    // The unhooked client's router is never called: it registers the handler its paths run.
    app.use('/hooks/unused', createWebhookRouter({ client: unhooked, onPaymentConfirmed }));
    server = app.listen(port, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const first = await hooked.generatePayment({ amount: '1000', developerTrackingId: 'order-warm' });
    await sandbox.completePayment(first.paymentId);
    const returned = await unhooked.generatePayment({ amount: '1000', developerTrackingId: 'order-warm-return' });
    await sandbox.completePayment(returned.paymentId);
    await unhooked.reconcilePayment(returned.paymentId);
    const swept = await unhooked.generatePayment({ amount: '1000', developerTrackingId: 'order-warm-sweep' });
    await sandbox.completePayment(swept.paymentId);
    await unhooked.runReconciliation(Date.now() + AFTER_SESSION_MS);
  });

  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await hooked?.close();
    await unhooked?.close();
    await sandbox?.close();
  });

  it(`a signed webhook runs at most ${WEBHOOK_FILES_CEILING} lib files, from the Express router through the core to the handler`, async () => {
    const { paymentId } = await hooked.generatePayment({ amount: '12500', developerTrackingId: 'order-path' });
    const run = await libRunOf(async () => {
      const settlement = await sandbox.completePayment(paymentId);
      expect(settlement.webhook).toMatchObject({ status: 200, delivered: true });
    });
    report('a signed webhook (Express)', run);
    expect(paid).toContain(paymentId);
    expectPath(run, 'webhook', WEBHOOK_FILES_CEILING, [
      'express/webhook.router.ts',
      'core/webhook/webhook.processor.ts',
    ]);
  });

  it(`the return check runs at most ${RETURN_FILES_CEILING} lib files, from the client to the handler`, async () => {
    const { paymentId } = await unhooked.generatePayment({ amount: '12500', developerTrackingId: 'order-return' });
    await sandbox.completePayment(paymentId);
    const run = await libRunOf(async () => {
      expect(await unhooked.reconcilePayment(paymentId)).toMatchObject({ outcome: 'confirmed', handled: true });
    });
    report('a return check (Express)', run);
    expect(paid).toContain(paymentId);
    expectPath(run, 'client', RETURN_FILES_CEILING, ['core/settlement/settlement.reconciler.ts']);
  });

  it(`a reconciliation pass runs at most ${RECONCILIATION_FILES_CEILING} lib files, from the client to the handler`, async () => {
    const { paymentId } = await unhooked.generatePayment({ amount: '12500', developerTrackingId: 'order-sweep' });
    await sandbox.completePayment(paymentId);
    const run = await libRunOf(async () => {
      expect(await unhooked.runReconciliation(Date.now() + AFTER_SESSION_MS)).toMatchObject({ checked: 1, settled: 1 });
    });
    report('a reconciliation pass (Express)', run);
    expect(paid).toContain(paymentId);
    expectPath(run, 'client', RECONCILIATION_FILES_CEILING, ['core/settlement/reconciliation.scheduler.ts']);
  });

  it("a duplicate's automatic refund calls the service downward too: no client file entered from below", async () => {
    const refunding = createPaymentsClient(sandbox.options({ duplicates: { refund: true } }));
    const refunded: string[] = [];
    createWebhookRouter({
      client: refunding,
      onPaymentConfirmed: () => undefined,
      onPaymentRefunded: (event) => void refunded.push(`${event.paymentId} of ${event.duplicateOf}`),
    });
    try {
      // Two checkouts of one order (each its own idempotency key): two payments, both paid.
      const order = { amount: '12500', developerTrackingId: 'order-twice' };
      const first = await refunding.generatePayment(order, { idempotencyKey: 'order-twice-tab-1' });
      await sandbox.completePayment(first.paymentId);
      expect(await refunding.reconcilePayment(first.paymentId)).toMatchObject({ outcome: 'confirmed' });
      const second = await refunding.generatePayment(order, { idempotencyKey: 'order-twice-tab-2' });
      await sandbox.completePayment(second.paymentId);
      const run = await libRunOf(async () => {
        expect(await refunding.reconcilePayment(second.paymentId)).toMatchObject({ outcome: 'duplicate' });
      });
      report("a duplicate's refund (Express)", run);
      expect(sandbox.getPayment(second.paymentId)?.state).toBe('refunded');
      expect(refunded).toEqual([`${second.paymentId} of ${first.paymentId}`]);
      expect(run.files).toContain('core/settlement/settlement.duplicates.ts');
      expect(run.runnerEntries).toBe(1);
      expect(enteredFromBelow(run.files, 'client')).toEqual([]);
    } finally {
      await refunding.close();
    }
  });
});
