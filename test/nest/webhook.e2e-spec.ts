import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import {
  ArgumentsHost,
  Catch,
  Controller,
  HttpException,
  Injectable,
  Post,
  type CanActivate,
  type ExceptionFilter,
  type INestApplication,
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, HttpAdapterHost } from '@nestjs/core';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { createHmac } from 'node:crypto';
import {
  OnPaymentConfirmed,
  PaymentsModule,
  PaymentsService,
  WEBHOOK_TOKEN_PARAM,
  type PaymentConfirmedEvent,
  type PaymentsModuleOptions,
} from '../../lib/index.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';

const SECRET = 'whsec_0123456789abcdef0123456789abcdef';
const PUBLIC_URL = 'https://shop.example/api/payments/webhook';

/** Records confirmations; can be told to fail or to be slow. */
@Injectable()
class ConfirmationHandler {
  readonly events: PaymentConfirmedEvent[] = [];
  failuresLeft = 0;
  delayMs = 0;

  @OnPaymentConfirmed()
  async onConfirmed(event: PaymentConfirmedEvent) {
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.failuresLeft > 0) {
      this.failuresLeft--;
      throw new Error('database down');
    }
    this.events.push(event);
  }
}

@Controller('bare')
class BareController {
  @Post()
  ok() {
    return { ok: true };
  }
}

/** A host-wide filter that rewrites every HttpException body (as many apps do). */
@Catch(HttpException)
class RewritingFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}
  catch(exception: HttpException, host: ArgumentsHost) {
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), { wrapped: true, status: exception.getStatus() }, exception.getStatus());
  }
}

/** A host-wide guard that lets everything through (like an auth guard with the route marked public). */
@Injectable()
class AllowAllGuard implements CanActivate {
  calls = 0;
  canActivate() {
    this.calls++;
    return true;
  }
}

interface Setup {
  adapter: 'express' | 'fastify';
  prefix?: string;
  path?: string;
  hostEmitter?: boolean;
  rawBody?: boolean;
  hostGlobals?: boolean;
  webhook?: Partial<NonNullable<PaymentsModuleOptions['webhook']>>;
  noHandler?: boolean;
}

interface Running {
  app: INestApplication;
  url: string;
  handler: ConfirmationHandler;
  payments: PaymentsService;
  close(): Promise<void>;
}

let fake: FakeService;
let counter = 0;

async function startApp(setup: Setup): Promise<Running> {
  const moduleRef = await Test.createTestingModule({
    imports: [
      ...(setup.hostEmitter ? [EventEmitterModule.forRoot()] : []),
      PaymentsModule.forRoot({
        publicKey: 'pk',
        privateKey: 'sk_secret_value_0000',
        baseUrl: fake.url,
        successLink: 'https://shop.example/ok',
        failLink: 'https://shop.example/ko',
        webhook: { publicUrl: PUBLIC_URL, secret: SECRET, path: setup.path, ...setup.webhook },
      }),
    ],
    controllers: [BareController],
    providers: [
      ...(setup.noHandler ? [] : [ConfirmationHandler]),
      ...(setup.hostGlobals ? [AllowAllGuard, { provide: APP_GUARD, useExisting: AllowAllGuard }, { provide: APP_FILTER, useClass: RewritingFilter }] : []),
    ],
  }).compile();
  const appOptions = { logger: false as const, rawBody: setup.rawBody };
  const app: INestApplication =
    setup.adapter === 'fastify' ? moduleRef.createNestApplication(new FastifyAdapter(), appOptions) : moduleRef.createNestApplication(appOptions);
  if (setup.prefix) app.setGlobalPrefix(setup.prefix);
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  return {
    app,
    url,
    handler: setup.noHandler ? (undefined as unknown as ConfirmationHandler) : app.get(ConfirmationHandler),
    payments: app.get(PaymentsService),
    close: () => app.close(),
  };
}

/** Generates a payment through the plugin and returns its id and the signed webhook URL it sent. */
async function generate(running: Running, amount = '12500', trackingId?: string) {
  const paymentId = `pay_${++counter}`;
  fake.reply(PATHS.generate, OK.generate(paymentId));
  await running.payments.generatePayment({ amount, developerTrackingId: trackingId });
  const sent = JSON.parse(fake.requests.at(-1)!.body) as { webhook: string };
  const token = new URL(sent.webhook).searchParams.get(WEBHOOK_TOKEN_PARAM)!;
  return { paymentId, webhook: sent.webhook, token };
}

function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const isText = typeof body === 'string';
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': isText ? 'application/x-www-form-urlencoded' : 'application/json', ...headers },
    body: isText ? body : JSON.stringify(body),
  });
}

function hookUrl(running: Running, token: string | undefined, extra = '', path = '/payments/webhook') {
  const q = token === undefined ? '' : `?${WEBHOOK_TOKEN_PARAM}=${encodeURIComponent(token)}`;
  return `${running.url}${path}${q}${extra ? (q ? '&' : '?') + extra : ''}`;
}

beforeAll(async () => {
  fake = await FakeService.start();
});
afterAll(() => fake.close());

describe.each(['express', 'fastify'] as const)('webhooks on the %s adapter', (adapter) => {
  let running: Running;
  beforeEach(async () => {
    running = await startApp({ adapter });
  });
  afterEach(() => running.close());

  it('generatePayment sends the signed webhook URL: publicUrl plus a token', async () => {
    const { webhook, token } = await generate(running);
    expect(webhook.startsWith(`${PUBLIC_URL}?${WEBHOOK_TOKEN_PARAM}=`)).toBe(true);
    expect(token).toMatch(/^[A-Za-z0-9_-]{24}\.[A-Za-z0-9_-]{43}$/);
  });

  it('a genuine JSON confirmation runs the handler once with what was recorded at generation', async () => {
    const { paymentId, token } = await generate(running, '4500', 'order-99');
    const res = await post(hookUrl(running, token), { payment_id: paymentId, status: 'completed' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true });
    expect(running.handler.events).toHaveLength(1);
    const [event] = running.handler.events;
    expect(event).toMatchObject({ paymentId, amount: '4500', developerTrackingId: 'order-99', payload: { payment_id: paymentId, status: 'completed' }, query: {} });
    expect(event.receivedAt).toBeInstanceOf(Date);
  });

  it('a duplicate of a done confirmation answers 200 and runs nothing', async () => {
    const { paymentId, token } = await generate(running);
    expect((await post(hookUrl(running, token), { payment_id: paymentId })).status).toBe(200);
    const again = await post(hookUrl(running, token), { payment_id: paymentId });
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(running.handler.events).toHaveLength(1);
  });

  it('accepts GET with the id in the query, form bodies, paymentId / id / result.payment_id, and no id at all', async () => {
    const cases: Array<(id: string, token: string) => Promise<Response>> = [
      (id, t) => fetch(hookUrl(running, t, `payment_id=${id}`)),
      (id, t) => post(hookUrl(running, t), `payment_id=${id}&status=completed`),
      (id, t) => post(hookUrl(running, t), { paymentId: id }),
      (id, t) => post(hookUrl(running, t), { id }),
      (id, t) => post(hookUrl(running, t), { result: { payment_id: id } }),
      (_id, t) => post(hookUrl(running, t), {}),
      (_id, t) => fetch(hookUrl(running, t)),
    ];
    for (const send of cases) {
      const { paymentId, token } = await generate(running);
      const res = await send(paymentId, token);
      expect(res.status).toBe(200);
      expect(running.handler.events.at(-1)?.paymentId).toBe(paymentId);
    }
    expect(running.handler.events).toHaveLength(cases.length);
    expect(running.handler.events[1].payload).toEqual({ payment_id: running.handler.events[1].paymentId, status: 'completed' });
  });

  describe('refuses without emitting', () => {
    it.each([
      ['no token', () => undefined],
      ['an empty token', () => ''],
      ['a garbage token', () => 'abc'],
      ['a token with a forged signature', (t: string) => `${t.split('.')[0]}.${'A'.repeat(43)}`],
      ['a well-signed token that was never issued', () => {
        const nonce = 'N'.repeat(24);
        return `${nonce}.${createHmac('sha256', SECRET).update(`nestjs-payments:webhook:v1:${nonce}`).digest('base64url')}`;
      }],
      ['a token signed with another secret', (t: string) => {
        const nonce = t.split('.')[0];
        return `${nonce}.${createHmac('sha256', 'another-secret-another-secret-xx').update(`nestjs-payments:webhook:v1:${nonce}`).digest('base64url')}`;
      }],
    ])('401 for %s', async (_name, makeToken) => {
      const { paymentId, token } = await generate(running);
      const res = await post(hookUrl(running, makeToken(token)), { payment_id: paymentId });
      expect(res.status).toBe(401);
      expect(running.handler.events).toHaveLength(0);
    });

    it('401 for a genuine token used for another payment (query or body)', async () => {
      const a = await generate(running);
      const b = await generate(running);
      expect((await post(hookUrl(running, a.token), { payment_id: b.paymentId })).status).toBe(401);
      expect((await fetch(hookUrl(running, a.token, `payment_id=${b.paymentId}`))).status).toBe(401);
      expect((await post(hookUrl(running, a.token, `payment_id=${a.paymentId}`), { id: b.paymentId })).status).toBe(401);
      expect(running.handler.events).toHaveLength(0);
    });

    it('401 for two tokens in the query', async () => {
      const a = await generate(running);
      const res = await post(hookUrl(running, a.token, `${WEBHOOK_TOKEN_PARAM}=${a.token}`), { payment_id: a.paymentId });
      expect(res.status).toBe(401);
      expect(running.handler.events).toHaveLength(0);
    });

    it('413 for a body over webhook.maxBodyBytes', async () => {
      const { paymentId, token } = await generate(running);
      const res = await post(hookUrl(running, token), { payment_id: paymentId, pad: 'x'.repeat(70_000) });
      expect(res.status).toBe(413);
      expect(running.handler.events).toHaveLength(0);
    });

    it('400 for malformed bodies, never 500', async () => {
      const { paymentId, token } = await generate(running);
      const bodies: Array<[string, string]> = [
        ['application/json', '{"payment_id": '],
        ['application/json', '[1,2,3]'],
        ['application/json', `{"payment_id": {"$gt": ""}}`],
        ['application/json', `{"payment_id": ["${paymentId}", "x"]}`],
      ];
      for (const [type, body] of bodies) {
        const res = await fetch(hookUrl(running, token), { method: 'POST', headers: { 'content-type': type }, body });
        expect(res.status).toBe(400);
      }
      expect(running.handler.events).toHaveLength(0);
      // The payment still confirms afterwards: a rejected request did not consume anything.
      expect((await post(hookUrl(running, token), { payment_id: paymentId })).status).toBe(200);
    });
  });

  it('a failing handler answers 500, stays not-done, and the redelivery runs it again', async () => {
    const { paymentId, token } = await generate(running);
    running.handler.failuresLeft = 1;
    const first = await post(hookUrl(running, token), { payment_id: paymentId });
    expect(first.status).toBe(500);
    expect(running.handler.events).toHaveLength(0);
    const second = await post(hookUrl(running, token), { payment_id: paymentId });
    expect(second.status).toBe(200);
    expect(running.handler.events.map((e) => e.paymentId)).toEqual([paymentId]);
  });

  it('concurrent duplicates run the handler once', async () => {
    const { paymentId, token } = await generate(running);
    running.handler.delayMs = 100;
    const answers = await Promise.all(Array.from({ length: 20 }, () => post(hookUrl(running, token), { payment_id: paymentId })));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200).length).toBeGreaterThanOrEqual(1);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    expect(running.handler.events).toHaveLength(1);
    expect(answers.find((r) => r.status === 409)?.headers.get('retry-after')).toBe('5');
  });
});

describe.each(['express', 'fastify'] as const)('webhook set-ups on the %s adapter', (adapter) => {
  it('lives under the global prefix and a custom path', async () => {
    const running = await startApp({ adapter, prefix: 'api', path: '/hooks/pay/' });
    try {
      const { paymentId, token } = await generate(running);
      expect((await post(hookUrl(running, token, '', '/hooks/pay'), { payment_id: paymentId })).status).toBe(404);
      expect((await post(hookUrl(running, token, '', '/api/hooks/pay'), { payment_id: paymentId })).status).toBe(200);
      expect(running.handler.events).toHaveLength(1);
    } finally {
      await running.close();
    }
  });

  it('runs each handler once when the host imports EventEmitterModule.forRoot() too', async () => {
    const running = await startApp({ adapter, hostEmitter: true });
    try {
      const { paymentId, token } = await generate(running);
      expect((await post(hookUrl(running, token), { payment_id: paymentId })).status).toBe(200);
      expect(running.handler.events).toHaveLength(1);
    } finally {
      await running.close();
    }
  });

  it('works with the raw-body option, a host-wide guard and a host-wide exception filter', async () => {
    const running = await startApp({ adapter, rawBody: true, hostGlobals: true });
    try {
      const { paymentId, token } = await generate(running);
      const forged = await post(hookUrl(running, 'x'), { payment_id: paymentId });
      expect(forged.status).toBe(401);
      expect(await forged.json()).toEqual({ wrapped: true, status: 401 });
      expect((await post(hookUrl(running, token), { payment_id: paymentId })).status).toBe(200);
      expect(running.handler.events).toHaveLength(1);
      expect(running.app.get(AllowAllGuard).calls).toBeGreaterThanOrEqual(2);
      // The host's own routes are untouched by the plugin.
      expect((await post(`${running.url}/bare`, {})).status).toBe(201);
    } finally {
      await running.close();
    }
  });

  it('verify() returning false refuses the confirmation (403) without emitting; true lets it through', async () => {
    let allow = false;
    const running = await startApp({ adapter, webhook: { verify: () => allow } });
    try {
      const { paymentId, token } = await generate(running);
      expect((await post(hookUrl(running, token), { payment_id: paymentId })).status).toBe(403);
      expect(running.handler.events).toHaveLength(0);
      allow = true;
      expect((await post(hookUrl(running, token), { payment_id: paymentId })).status).toBe(200);
      expect(running.handler.events).toHaveLength(1);
    } finally {
      await running.close();
    }
  });

  it('with no @OnPaymentConfirmed handler, answers 500 rather than lose the confirmation', async () => {
    const running = await startApp({ adapter, noHandler: true });
    try {
      const { paymentId, token } = await generate(running);
      expect((await post(hookUrl(running, token), { payment_id: paymentId })).status).toBe(500);
    } finally {
      await running.close();
    }
  });
});

describe('webhooks not configured', () => {
  it('the route answers 404 and generatePayment sends no webhook', async () => {
    const moduleRef = await Test.createTestingModule({
      imports: [PaymentsModule.forRoot({ publicKey: 'pk', privateKey: 'sk', baseUrl: fake.url, successLink: 'https://s.example/a', failLink: 'https://s.example/b' })],
    }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    try {
      fake.reply(PATHS.generate, OK.generate('pay_plain'));
      await app.get(PaymentsService).generatePayment({ amount: '1' });
      expect(JSON.parse(fake.requests.at(-1)!.body)).not.toHaveProperty('webhook');
      const url = (await app.getUrl()).replace('[::1]', '127.0.0.1');
      expect((await post(`${url}/payments/webhook`, { payment_id: 'pay_plain' })).status).toBe(404);
    } finally {
      await app.close();
    }
  });
});
