import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import {
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { PaymentsDeskModule } from '../../lib/desk/index.js';
import { OnPaymentConfirmed, PaymentsModule, type PaymentConfirmedEvent } from '../../lib/index.js';
import { getPaymentsClientToken } from '../../lib/nest/index.js';
import type { PaymentsClient } from '../../lib/express/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { quietLogger } from '../support/outcome-kit.js';
import { confirmedHandler, deskChecks, SECRETS, seed, type DeskHarness, type Seeded } from './desk-scenario.js';

// The desk in a Nest app (Express and Fastify adapters), over loopback, against the sandbox: PaymentsModule's
// webhook route and handlers, and PaymentsDeskModule at /desk behind the host's guard.

jest.setTimeout(60_000);

/** The host's authentication: a header stands for a session; mallory is signed in but not allowed. */
@Injectable()
class HeaderGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const request = context
      .switchToHttp()
      .getRequest<{ headers: Record<string, string | undefined>; user?: unknown }>();
    const user = request.headers['x-user'];
    if (user === undefined) throw new UnauthorizedException();
    if (user === 'mallory') return false;
    request.user = { id: user, name: `${user[0].toUpperCase()}${user.slice(1)}` };
    return true;
  }
}

let onConfirmed: (paymentId: string, trackingId: string | undefined) => void = () => undefined;

@Injectable()
class Orders {
  @OnPaymentConfirmed()
  paid(event: PaymentConfirmedEvent): void {
    onConfirmed(event.paymentId, event.developerTrackingId);
  }
}

for (const [adapter, sandboxPort, PORT] of [
  ['express', 29201, 29202],
  ['fastify', 29211, 29212],
] as const) {
  describe(`the payments desk in a Nest app (${adapter} adapter)`, () => {
    let sandbox: PaymentsSandbox;
    let app: INestApplication;
    let harness: DeskHarness;
    let seeded: Seeded;

    beforeAll(async () => {
      sandbox = await PaymentsSandbox.start({ port: sandboxPort, privateKey: SECRETS.privateKey });
      const logs: string[] = [];
      const moduleRef = await Test.createTestingModule({
        imports: [
          PaymentsModule.forRoot(
            sandbox.options({
              logger: quietLogger(),
              webhook: { publicUrl: `http://127.0.0.1:${PORT}/payments/webhook`, secret: SECRETS.webhookSecret },
              reconciliation: { enabled: false, maxChecks: 1 },
            }),
          ),
          PaymentsDeskModule.forRoot({ path: 'desk', guard: HeaderGuard, logger: quietLogger(logs) }),
        ],
        providers: [Orders],
      }).compile();
      app =
        adapter === 'fastify'
          ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false })
          : moduleRef.createNestApplication({ logger: false });
      await app.listen(PORT, '127.0.0.1');
      const client = app.get<PaymentsClient>(getPaymentsClientToken());
      harness = {
        desk: `http://127.0.0.1:${PORT}/desk`,
        client,
        sandbox,
        failing: new Set(),
        settled: new Map(),
        logs,
      };
      onConfirmed = confirmedHandler(harness);
      seeded = await seed(harness, 'n');
    });

    afterAll(async () => {
      await app?.close();
      await sandbox?.close();
    });

    it('refuses to be built without a guard or a path, naming the fix', () => {
      const forRoot = PaymentsDeskModule.forRoot as (options: unknown) => unknown;
      expect(() => forRoot({ path: 'desk' })).toThrow(
        /options\.guard is required: .* Pass your authentication guard class/,
      );
      expect(() => forRoot({ guard: HeaderGuard })).toThrow(/options\.path is required/);
    });

    deskChecks(
      () => harness,
      () => seeded,
    );
  });
}
