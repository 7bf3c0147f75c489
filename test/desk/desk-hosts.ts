// The desk's front ends, each started on loopback against its own sandbox with the scenario's
// payments made: Express (`createPaymentsDesk`), and a Nest app (`PaymentsDeskModule`) on the
// Express and on the Fastify adapter. The browser test and the HTTP checks run on each.
import {
  Inject,
  Injectable,
  UnauthorizedException,
  type CanActivate,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import express from 'express';
import type { Server } from 'node:http';
import { createPaymentsDesk, PaymentsDeskModule } from '../../lib/desk/index.js';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { OnPaymentConfirmed, PaymentsModule, type PaymentConfirmedEvent } from '../../lib/index.js';
import { getPaymentsClientToken } from '../../lib/nest/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { freePort } from '../faults/support/own-servers.js';
import { quietLogger } from '../support/outcome-kit.js';
import { confirmedHandler, SECRETS, seed, type DeskHarness, type Seeded } from './desk-scenario.js';

/** The front ends the desk is mounted in. */
export type DeskHost = 'express' | 'nest-express' | 'nest-fastify';

/** Every front end. */
export const DESK_HOSTS: readonly DeskHost[] = ['express', 'nest-express', 'nest-fastify'];

/** A running front end with the scenario's payments. */
export interface RunningDesk {
  harness: DeskHarness;
  seeded: Seeded;
  close(): Promise<void>;
}

/** The host's authentication, as a Nest guard: a header stands for a session; mallory is signed in but not allowed. */
@Injectable()
export class HeaderGuard implements CanActivate {
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

const CONFIRMED = Symbol('confirmed handler');

@Injectable()
class Orders {
  constructor(@Inject(CONFIRMED) private readonly confirmed: ReturnType<typeof confirmedHandler>) {}

  @OnPaymentConfirmed()
  paid(event: PaymentConfirmedEvent): void {
    this.confirmed(event.paymentId, event.developerTrackingId);
  }
}

/**
 * Starts `host` with the scenario's payments (tag `tag`), the desk at `/desk` behind a header
 * standing for the host's session (`x-user: alice`; `mallory` is signed in but not allowed).
 */
export async function startDesk(host: DeskHost, tag: string): Promise<RunningDesk> {
  const port = await freePort();
  const sandbox = await PaymentsSandbox.start({ port: await freePort(), privateKey: SECRETS.privateKey });
  const logs: string[] = [];
  const options = {
    ...sandbox.options(),
    logger: quietLogger(),
    // Express mounts the router at /hook; Nest serves the module's default route.
    webhook: {
      publicUrl: `http://127.0.0.1:${port}/${host === 'express' ? 'hook' : 'payments/webhook'}`,
      secret: SECRETS.webhookSecret,
    },
    reconciliation: { enabled: false, maxChecks: 1 },
  };
  const harness: DeskHarness = {
    desk: `http://127.0.0.1:${port}/desk`,
    client: undefined as unknown as PaymentsClient,
    sandbox,
    failing: new Set(),
    settled: new Map(),
    logs,
  };
  const onConfirmed = confirmedHandler(harness);
  let close: () => Promise<void>;
  if (host === 'express') {
    const client = createPaymentsClient(options);
    const app = express();
    app.use(
      '/hook',
      createWebhookRouter({ client, onPaymentConfirmed: (e) => onConfirmed(e.paymentId, e.developerTrackingId) }),
    );
    app.use(
      '/desk',
      createPaymentsDesk({
        client,
        logger: quietLogger(logs),
        authorize: (req) => {
          const user = req.headers['x-user'];
          if (typeof user !== 'string') return undefined;
          return user === 'mallory' ? false : { id: user, name: `${user[0].toUpperCase()}${user.slice(1)}` };
        },
      }),
    );
    const server: Server = app.listen(port, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    harness.client = client;
    close = async () => {
      await new Promise((r) => server.close(r));
      await client.close();
    };
  } else {
    const moduleRef = await Test.createTestingModule({
      imports: [
        PaymentsModule.forRoot(options),
        PaymentsDeskModule.forRoot({ path: 'desk', guard: HeaderGuard, logger: quietLogger(logs) }),
      ],
      providers: [Orders, { provide: CONFIRMED, useValue: onConfirmed }],
    }).compile();
    const app: INestApplication =
      host === 'nest-fastify'
        ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false })
        : moduleRef.createNestApplication({ logger: false });
    await app.listen(port, '127.0.0.1');
    harness.client = app.get<PaymentsClient>(getPaymentsClientToken());
    close = () => app.close();
  }
  try {
    const seeded = await seed(harness, tag);
    return {
      harness,
      seeded,
      close: async () => {
        await close();
        await sandbox.close();
      },
    };
  } catch (error) {
    await close();
    await sandbox.close();
    throw error;
  }
}
