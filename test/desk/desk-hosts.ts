// The desk's front ends, each started on loopback against its own sandbox with the scenario's
// payments made: Express (`createPaymentsDesk`), and a Nest app (`PaymentsDeskModule`) on the
// Express and on the Fastify adapter. The browser test and the HTTP checks run on each; the browser
// test and desk.instances.e2e-spec.ts on two instances of each behind a balancer, on one store.
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
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import type { Server } from 'node:http';
import { createPaymentsDesk, PaymentsDeskModule } from '../../lib/desk/index.js';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { OnPaymentConfirmed, PaymentsModule, type PaymentConfirmedEvent } from '../../lib/index.js';
import { getPaymentsClientToken } from '../../lib/nest/index.js';
import type { PaymentsStore } from '../../lib/store/index.js';
import { RedisPaymentsStore } from '../../lib/redis/index.js';
import { PaymentsSandbox } from '../../lib/testing/index.js';
import { startBalancer, type Balancer } from '../compat/shared/balancer.js';
import { freePort } from '../faults/support/own-servers.js';
import { quietLogger } from '../support/outcome-kit.js';
import { REDIS_URL } from '../support/services.js';
import { confirmedHandler, SECRETS, seed, type DeskHarness, type Seeded } from './desk-scenario.js';

/** The front ends the desk is mounted in. */
export type DeskHost = 'express' | 'nest-express' | 'nest-fastify';

/** Every front end. */
export const DESK_HOSTS: readonly DeskHost[] = ['express', 'nest-express', 'nest-fastify'];

/** A running front end with the scenario's payments. */
export interface RunningDesk {
  harness: DeskHarness;
  seeded: Seeded;
  /** With two instances: the balancer in front of them (what it passed on, to which instance). */
  balancer?: Balancer;
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

/** One form key for every instance, as docs/desk.md asks behind a balancer without sticky sessions. */
const FORM_KEY = 'desk-hosts-form-key-5b0e8c1f7a2d4936';

/** The actions' posts: the balancer holds the first one's answer until the second arrives (a double click on a slow link). */
export const ACTION_PATH = /\/payments\/[^/]+\/(run-handlers|refund|review)$/;

/**
 * Starts `host` with the scenario's payments (tag `tag`), the desk at `/desk` behind a header
 * standing for the host's session (`x-user: alice`; `mallory` is signed in but not allowed).
 * With `store` (each instance's store, one store shared by both): two instances of the host
 * behind a round-robin balancer (test/compat/shared/balancer.ts), whose address is the desk's and
 * the webhooks'; the payments are made through the first instance. Else one instance on the
 * client's default store.
 */
export async function startDesk(host: DeskHost, tag: string, store?: () => PaymentsStore): Promise<RunningDesk> {
  const ports = await Promise.all((store === undefined ? [0] : [0, 1]).map(() => freePort()));
  const balancer =
    store === undefined
      ? undefined
      : await startBalancer(
          ports.map((port) => `http://127.0.0.1:${port}`),
          { pair: (method, path) => method === 'POST' && ACTION_PATH.test(path) },
        );
  const base = balancer?.url ?? `http://127.0.0.1:${ports[0]}`;
  const sandbox = await PaymentsSandbox.start({ port: await freePort(), privateKey: SECRETS.privateKey });
  const logs: string[] = [];
  const options = {
    ...sandbox.options(),
    logger: quietLogger(),
    // Express mounts the router at /hook; Nest serves the module's default route.
    webhook: {
      publicUrl: `${base}/${host === 'express' ? 'hook' : 'payments/webhook'}`,
      secret: SECRETS.webhookSecret,
    },
    reconciliation: { enabled: false, maxChecks: 1 },
  };
  const harness: DeskHarness = {
    desk: `${base}/desk`,
    client: undefined as unknown as PaymentsClient,
    sandbox,
    failing: new Set(),
    settled: new Map(),
    logs,
  };
  const onConfirmed = confirmedHandler(harness);
  const formKey = store === undefined ? {} : { formKey: FORM_KEY };
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const closer of closers) await closer();
    await balancer?.close();
    await sandbox.close();
  };
  try {
    for (const port of ports) {
      const own = { ...options, ...(store === undefined ? {} : { store: store() }) };
      let client: PaymentsClient;
      if (host === 'express') {
        client = createPaymentsClient(own);
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
            ...formKey,
            authorize: (req) => {
              const user = req.headers['x-user'];
              if (typeof user !== 'string') return undefined;
              return user === 'mallory' ? false : { id: user, name: `${user[0].toUpperCase()}${user.slice(1)}` };
            },
          }),
        );
        const server: Server = app.listen(port, '127.0.0.1');
        await new Promise((r) => server.once('listening', r));
        const opened = client;
        closers.push(async () => {
          await new Promise((r) => server.close(r));
          await opened.close();
        });
      } else {
        const moduleRef = await Test.createTestingModule({
          imports: [
            PaymentsModule.forRoot(own),
            PaymentsDeskModule.forRoot({ path: 'desk', guard: HeaderGuard, logger: quietLogger(logs), ...formKey }),
          ],
          providers: [Orders, { provide: CONFIRMED, useValue: onConfirmed }],
        }).compile();
        const app: INestApplication =
          host === 'nest-fastify'
            ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false })
            : moduleRef.createNestApplication({ logger: false });
        await app.listen(port, '127.0.0.1');
        client = app.get<PaymentsClient>(getPaymentsClientToken());
        closers.push(() => app.close());
      }
      harness.client ??= client;
    }
    const seeded = await seed(harness, tag);
    return { harness, seeded, ...(balancer === undefined ? {} : { balancer }), close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** One Redis store for two instances, under a key prefix of the test's own, keeping the stories. */
export function sharedRedis(tag: string): { store: () => PaymentsStore; cleanup(): Promise<void> } {
  const prefix = `test:desk-${tag}:${randomUUID()}:`;
  return {
    store: () => new RedisPaymentsStore(REDIS_URL, { keyPrefix: prefix, story: true }),
    cleanup: async () => {
      const redis = new Redis(REDIS_URL);
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      await redis.quit();
    },
  };
}
