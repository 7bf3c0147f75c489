// A webhook URL that does not reach its route is loud: the start-up warning (global prefix
// included), another registration's token refused with 421 (never handled under the wrong
// account), and the overlap message naming each registration's module.
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, Module, type DynamicModule, type INestApplication, type LoggerService } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import {
  OnPaymentConfirmed,
  PaymentsModule,
  PaymentsService,
  PaymentsValidationError,
  getPaymentsServiceToken,
  type PaymentConfirmedEvent,
  type PaymentsModuleOptions,
} from '../../lib/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { freePort } from '../support/ports.js';

const SECRET = 'whsec_shared_by_both_accounts_0123456789';
// Each app's public URL must be known before its clients are made (at module init): a free port
// is picked first, then listened on.

/** Every warning Nest's logger was given, with its context. */
class CapturingLogger implements LoggerService {
  readonly warnings: string[] = [];
  log(): void {}
  error(): void {}
  debug(): void {}
  verbose(): void {}
  warn(message: unknown, context?: unknown): void {
    this.warnings.push(`${String(context)}: ${String(message)}`);
  }
}

/** The confirmations the handler saw, as `<registration>:<payment id>`. */
@Injectable()
class Ledger {
  readonly confirmed: string[] = [];
  @OnPaymentConfirmed()
  onConfirmed(event: PaymentConfirmedEvent): void {
    this.confirmed.push(`${event.registration ?? 'default'}:${event.paymentId}`);
  }
}

interface Started {
  app: INestApplication;
  base: string;
  logger: CapturingLogger;
}

async function start(
  port: number,
  imports: Array<DynamicModule | (new () => object)>,
  prefix?: string,
): Promise<Started> {
  const moduleRef = await Test.createTestingModule({ imports, providers: [Ledger] }).compile();
  const logger = new CapturingLogger();
  const app = moduleRef.createNestApplication({ logger });
  if (prefix) app.setGlobalPrefix(prefix);
  running = app;
  await app.listen(port, '127.0.0.1');
  return { app, base: `http://127.0.0.1:${port}`, logger };
}

let sandbox: PaymentsSandbox;
let running: INestApplication | undefined;
beforeAll(async () => {
  sandbox = await PaymentsSandbox.start({ webhookAttempts: 1 });
});
afterEach(async () => {
  await running?.close();
  running = undefined;
});
afterAll(async () => {
  await sandbox.close();
});

function account(path: string, publicUrl: string, name?: string, secret = SECRET): PaymentsModuleOptions {
  return {
    ...sandbox.options(),
    name,
    reconciliation: { enabled: false },
    webhook: { path, publicUrl, secret },
  };
}

/** Whether a text holds any 8 characters in a row of a secret. */
const holdsPartOf = (text: string, secret: string) =>
  Array.from({ length: secret.length - 7 }, (_, i) => secret.slice(i, i + 8)).some((run) => text.includes(run));

const payments = (warnings: string[]) => warnings.filter((w) => w.startsWith('Payments'));

describe('two accounts sharing a secret, the second one publishing the first one’s webhook URL', () => {
  it("refuses the outlet's token on the default route (421, logged): its payment runs once, under outlet", async () => {
    const port = await freePort();
    const wrong = `http://127.0.0.1:${port}/payments/webhook`;
    const { app, logger } = await start(port, [
      PaymentsModule.forRoot(account('payments/webhook', wrong)),
      PaymentsModule.forRoot(account('payments/outlet/webhook', wrong, 'outlet')),
    ]);
    const outlet = app.get<PaymentsService>(getPaymentsServiceToken('outlet'));
    const { paymentId } = await outlet.generatePayment({ amount: '4200', developerTrackingId: 'order-outlet' });
    const settled = await sandbox.completePayment(paymentId, { requireDelivery: false });
    // The customer's return page: the outlet's own path.
    await outlet.reconcilePayment(paymentId);
    // Before: once under the default registration (the misrouted webhook), once under outlet.
    expect(app.get(Ledger).confirmed).toEqual([`outlet:${paymentId}`]);
    expect(settled.lastStatus).toBe(421);
    expect(payments(logger.warnings)).toContainEqual(
      expect.stringMatching(
        /^Payments:outlet: webhook\.publicUrl of registration 'outlet' .*'\/payments\/webhook' but its webhook route is served at '\/payments\/outlet\/webhook'/,
      ),
    );
    expect(logger.warnings).toContainEqual(expect.stringContaining('carrying a token minted by another registration'));
  });

  it('confirms both accounts by webhook once each publishes its own route (no warning)', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const { app, logger } = await start(port, [
      PaymentsModule.forRoot(account('payments/webhook', `${base}/payments/webhook`)),
      PaymentsModule.forRoot(account('payments/outlet/webhook', `${base}/payments/outlet/webhook`, 'outlet')),
    ]);
    expect(payments(logger.warnings)).toEqual([]);
    const shop = await app.get(PaymentsService).generatePayment({ amount: '1000' });
    const outlet = await app
      .get<PaymentsService>(getPaymentsServiceToken('outlet'))
      .generatePayment({ amount: '2000' });
    expect((await sandbox.completePayment(shop.paymentId)).lastStatus).toBe(200);
    expect((await sandbox.completePayment(outlet.paymentId)).lastStatus).toBe(200);
    expect(app.get(Ledger).confirmed.sort()).toEqual(
      [`default:${shop.paymentId}`, `outlet:${outlet.paymentId}`].sort(),
    );
  });
});

describe('two accounts with their own secrets, the second one publishing the first one’s webhook URL', () => {
  const SHOP_SECRET = 'whsec_shop_account_own_secret_0123456789';
  const OUTLET_SECRET = 'whsec_outlet_account_own_secret_987654321';

  it("answers the outlet's token on the default route 421 with a warning naming both registrations, no secret", async () => {
    const port = await freePort();
    const wrong = `http://127.0.0.1:${port}/payments/webhook`;
    const { app, logger } = await start(port, [
      PaymentsModule.forRoot(account('payments/webhook', wrong, undefined, SHOP_SECRET)),
      PaymentsModule.forRoot(account('payments/outlet/webhook', wrong, 'outlet', OUTLET_SECRET)),
    ]);
    const outlet = app.get<PaymentsService>(getPaymentsServiceToken('outlet'));
    const { paymentId } = await outlet.generatePayment({ amount: '4300', developerTrackingId: 'order-outlet-2' });
    const settled = await sandbox.completePayment(paymentId, { requireDelivery: false });
    // Before: 401 'missing or invalid webhook token', and nothing in the log.
    expect(settled.lastStatus).toBe(421);
    await outlet.reconcilePayment(paymentId);
    expect(app.get(Ledger).confirmed).toEqual([`outlet:${paymentId}`]);
    const misrouted = logger.warnings.filter((w) => w.includes('carrying a token minted by another registration'));
    expect(misrouted).toEqual([
      expect.stringMatching(
        /^Payments: webhook: refused a delivery on route '\/payments\/webhook' of the default registration (\(imported by RootTestModule\) )?carrying a token minted by another registration of this app, registration 'outlet'/,
      ),
    ]);
    for (const warning of logger.warnings) {
      expect(holdsPartOf(warning, SHOP_SECRET)).toBe(false);
      expect(holdsPartOf(warning, OUTLET_SECRET)).toBe(false);
    }
  });

  it('still answers a forged token 401 without a warning', async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const { logger } = await start(port, [
      PaymentsModule.forRoot(account('payments/webhook', `${base}/payments/webhook`, undefined, SHOP_SECRET)),
      PaymentsModule.forRoot(
        account('payments/outlet/webhook', `${base}/payments/outlet/webhook`, 'outlet', OUTLET_SECRET),
      ),
    ]);
    const forged = 'AAAAAAAAAAAAAAAA.zzzzzz.4300..abcdef.AAAAAAAAAAAAAAAAAAAAAA';
    const answer = await fetch(`${base}/payments/webhook/${forged}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ payment_id: 'pay_forged' }),
    });
    expect(answer.status).toBe(401);
    expect(logger.warnings.filter((w) => w.includes('another registration'))).toEqual([]);
  });
});

describe('the start-up warning, with the global prefix', () => {
  it('names the public URL’s path and the route served under the prefix', async () => {
    const port = await freePort();
    const { logger } = await start(
      port,
      [PaymentsModule.forRoot(account('payments/webhook', `http://127.0.0.1:${port}/payments/webhook`))],
      'api',
    );
    expect(payments(logger.warnings)).toEqual([
      expect.stringMatching(
        /^Payments: webhook\.publicUrl of the default registration .*'\/payments\/webhook' but its webhook route is served at '\/api\/payments\/webhook'/,
      ),
    ]);
  });

  it('is silent when the public URL ends with the route (under the prefix, a proxy prefix before it)', async () => {
    const port = await freePort();
    const { app, logger } = await start(
      port,
      [PaymentsModule.forRoot(account('payments/webhook', `http://127.0.0.1:${port}/api/payments/webhook`))],
      'api',
    );
    expect(payments(logger.warnings)).toEqual([]);
    const { paymentId } = await app.get(PaymentsService).generatePayment({ amount: '1500' });
    expect((await sandbox.completePayment(paymentId)).lastStatus).toBe(200);
  });

  it('is silent for a route excluded from the prefix', async () => {
    const port = await freePort();
    const moduleRef = await Test.createTestingModule({
      imports: [PaymentsModule.forRoot(account('payments/webhook', `http://127.0.0.1:${port}/payments/webhook`))],
    }).compile();
    const logger = new CapturingLogger();
    const app = moduleRef.createNestApplication({ logger });
    app.setGlobalPrefix('api', { exclude: ['payments/webhook', 'payments/webhook/:token'] });
    running = app;
    await app.listen(port, '127.0.0.1');
    expect(payments(logger.warnings)).toEqual([]);
  });
});

describe('overlapping routes of two unnamed registrations in two modules', () => {
  it('the error names each registration’s module', async () => {
    const options = account('payments/webhook', 'https://shop.example/payments/webhook');
    @Module({ imports: [PaymentsModule.forRoot(options)] })
    class HealthModule {}
    @Module({ imports: [PaymentsModule.forRoot(options), HealthModule] })
    class AppModule {}
    const starting = start(await freePort(), [AppModule]);
    await expect(starting).rejects.toThrow(PaymentsValidationError);
    await expect(starting).rejects.toThrow(
      /of the default registration \(imported by (AppModule|HealthModule)\) overlaps .* of the default registration \(imported by (AppModule|HealthModule)\)/,
    );
    await expect(starting).rejects.toThrow(/AppModule.*HealthModule|HealthModule.*AppModule/);
  });
});
