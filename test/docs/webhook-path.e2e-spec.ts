/**
 * How much of lib one paid webhook runs: the lib files V8's precise coverage sees executed while a
 * signed webhook reaches the host's `@OnPaymentConfirmed()` method in a Nest app (the sandbox's own
 * files left out). A maintainer follows these files to get from the request to the handler; the
 * ceiling keeps the path from growing unnoticed (lower it as the path gets shorter).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Session } from 'node:inspector/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { OnPaymentConfirmed, PaymentsModule, PaymentsService, type PaymentConfirmedEvent } from '../../lib/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { freePort } from '../faults/support/own-servers.js';

const LIB = join(import.meta.dirname, '../../lib');

/** The most lib files one paid webhook may run, from the route to the handler and back. */
const WEBHOOK_FILES_CEILING = 37;

@Injectable()
class Orders {
  readonly paid: string[] = [];
  @OnPaymentConfirmed()
  markPaid(event: PaymentConfirmedEvent) {
    this.paid.push(event.paymentId);
  }
}

/** The lib files (outside the sandbox) with a function that ran while `work` did. */
async function libFilesRunBy(work: () => Promise<void>): Promise<string[]> {
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
    return result
      .filter((script) => script.functions.some((f) => f.ranges[0].count > 0))
      .map((script) => (script.url.startsWith('file:') ? fileURLToPath(script.url) : script.url))
      .filter((path) => path.startsWith(LIB))
      .map((path) => relative(LIB, path))
      .filter((file) => !file.startsWith('testing/'))
      .sort();
  } finally {
    session.disconnect();
  }
}

describe('the lib files one paid webhook runs (Nest)', () => {
  let sandbox: PaymentsSandbox;
  let app: INestApplication;
  let payments: PaymentsService;

  beforeAll(async () => {
    sandbox = await PaymentsSandbox.start();
    // The webhook's public URL names the app's own port, so a free port is picked first.
    const port = await freePort();
    const moduleRef = await Test.createTestingModule({
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
    app = moduleRef.createNestApplication({ logger: false });
    await app.listen(port, '127.0.0.1');
    payments = app.get(PaymentsService);
    // A first payment, so that what runs once per process (loading, first measurements) is not counted.
    const first = await payments.generatePayment({ amount: '1000', developerTrackingId: 'order-warm' });
    await sandbox.completePayment(first.paymentId);
  });

  afterAll(async () => {
    await app?.close();
    await sandbox?.close();
  });

  it(`runs at most ${WEBHOOK_FILES_CEILING} lib files, from the Nest route through the core to the handler`, async () => {
    const { paymentId } = await payments.generatePayment({ amount: '12500', developerTrackingId: 'order-path' });
    const files = await libFilesRunBy(async () => {
      const settlement = await sandbox.completePayment(paymentId);
      expect(settlement.webhook).toMatchObject({ status: 200, delivered: true });
    });
    process.stdout.write(`one paid webhook ran ${files.length} lib files:\n  ${files.join('\n  ')}\n`);
    expect(app.get(Orders).paid).toContain(paymentId);
    expect(files).toEqual(
      expect.arrayContaining([
        'nest/webhook.controller.ts',
        'core/webhook/webhook.processor.ts',
        'core/settlement/settlement.runner.ts',
        'nest/payments.events-bridge.ts',
      ]),
    );
    expect(files.length).toBeLessThanOrEqual(WEBHOOK_FILES_CEILING);
  });
});
