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
} from '@nestjs/common';
import { APP_FILTER, APP_GUARD, HttpAdapterHost } from '@nestjs/core';
import { EventEmitterModule } from '@nestjs/event-emitter';
import { WebhookTokenSigner } from '../../lib/core/webhook/webhook.token.js';
import {
  OnPaymentAuthorized,
  OnPaymentConfirmed,
  OnPaymentEvent,
  OnPaymentExpired,
  OnPaymentFailed,
  PaymentEvents,
  PaymentsModule,
  PaymentsService,
  type PaymentMismatchEvent,
  type PaymentOutcomeEvent,
  type PaymentsModuleOptions,
} from '../../lib/index.js';
import { FakeService } from '../support/fake-service.js';
import { postChunked } from '../support/outcome-kit.js';
import {
  ADAPTERS,
  answerVerify,
  generateThrough,
  startNestApp,
  verifyCalls,
  type AdapterName,
  type RunningApp,
} from '../support/nest-app.js';
import { forgeSignature } from '../support/tokens.js';

const SECRET = 'whsec_0123456789abcdef0123456789abcdef';
const PUBLIC_URL = 'https://shop.example/payments/webhook';

/** A promise released from outside. */
function gate() {
  let release!: () => void;
  const promise = new Promise<void>((r) => (release = r));
  return { promise, release };
}

/** Records every outcome event; the confirmation handler can be told to fail or to wait. */
@Injectable()
class Outcomes {
  readonly events: Array<[string, PaymentOutcomeEvent]> = [];
  confirmFailures = 0;
  confirmGate?: Promise<void>;
  confirmEntered = gate();

  @OnPaymentConfirmed()
  async confirmed(event: PaymentOutcomeEvent) {
    this.confirmEntered.release();
    await this.confirmGate;
    if (this.confirmFailures > 0) {
      this.confirmFailures--;
      throw new Error('database down');
    }
    this.events.push([PaymentEvents.CONFIRMED, event]);
  }
  @OnPaymentFailed()
  failed(event: PaymentOutcomeEvent) {
    this.events.push([PaymentEvents.FAILED, event]);
  }
  @OnPaymentExpired()
  expired(event: PaymentOutcomeEvent) {
    this.events.push([PaymentEvents.EXPIRED, event]);
  }
  @OnPaymentAuthorized()
  authorized(event: PaymentOutcomeEvent) {
    this.events.push([PaymentEvents.AUTHORIZED, event]);
  }
  @OnPaymentEvent(PaymentEvents.MISMATCH)
  mismatch(event: PaymentMismatchEvent) {
    this.events.push([PaymentEvents.MISMATCH, event]);
  }

  named(name: string): PaymentOutcomeEvent[] {
    return this.events.filter(([n]) => n === name).map(([, e]) => e);
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
    this.adapterHost.httpAdapter.reply(
      host.switchToHttp().getResponse(),
      { wrapped: true, status: exception.getStatus() },
      exception.getStatus(),
    );
  }
}

/** A host-wide guard that lets everything through and counts. */
@Injectable()
class AllowAllGuard implements CanActivate {
  calls = 0;
  canActivate() {
    this.calls++;
    return true;
  }
}

interface Setup {
  prefix?: string;
  hostEmitter?: boolean;
  rawBody?: boolean;
  hostGlobals?: boolean;
  noHandler?: boolean;
  options?: Partial<PaymentsModuleOptions>;
}

interface Shop extends RunningApp {
  outcomes: Outcomes;
  payments: PaymentsService;
}

let fake: FakeService;
let counter = 0;

function moduleOptions(setup: Setup = {}): PaymentsModuleOptions {
  const { webhook, ...rest } = setup.options ?? {};
  return {
    publicKey: 'pk',
    privateKey: 'sk_secret_value_0000',
    baseUrl: fake.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    reconciliation: { enabled: false },
    webhook: { publicUrl: PUBLIC_URL, secret: SECRET, ...webhook },
    ...rest,
  };
}

async function startShop(adapter: AdapterName, setup: Setup = {}): Promise<Shop> {
  const running = await startNestApp(
    adapter,
    {
      imports: [
        ...(setup.hostEmitter ? [EventEmitterModule.forRoot()] : []),
        PaymentsModule.forRoot(moduleOptions(setup)),
      ],
      controllers: [BareController],
      providers: [
        ...(setup.noHandler ? [] : [Outcomes]),
        ...(setup.hostGlobals
          ? [
              AllowAllGuard,
              { provide: APP_GUARD, useExisting: AllowAllGuard },
              { provide: APP_FILTER, useClass: RewritingFilter },
            ]
          : []),
      ],
    },
    { prefix: setup.prefix, rawBody: setup.rawBody },
  );
  return {
    ...running,
    outcomes: setup.noHandler ? (undefined as unknown as Outcomes) : running.app.get(Outcomes),
    payments: running.app.get(PaymentsService),
  };
}

/** Generates a payment through the plugin; returns its id, the signed URL and where to deliver it on this app. */
async function generate(shop: Shop, options: { amount?: string; trackingId?: string; id?: string } = {}) {
  const id = options.id ?? `pay_${++counter}`;
  const generated = await generateThrough(fake, id, () =>
    shop.payments.generatePayment({ amount: options.amount ?? '12500', developerTrackingId: options.trackingId }),
  );
  // The public URL's origin is the shop's public one; deliveries go to the app on loopback.
  const hook = (extra = '') => `${shop.url}${generated.webhook.pathname}${generated.webhook.search}${extra}`;
  return { ...generated, hook };
}

function post(url: string, body: unknown, contentType: string | null = 'application/json') {
  const headers: Record<string, string> = contentType ? { 'content-type': contentType } : {};
  return fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

beforeAll(async () => {
  fake = await FakeService.start();
});
afterAll(() => fake.close());

describe.each(ADAPTERS)('webhooks on Nest-%s', (adapter) => {
  let shop: Shop;
  beforeEach(async () => {
    fake.reset();
    shop = await startShop(adapter);
  });
  afterEach(() => shop.close());

  it('generatePayment sends publicUrl/<signed token> as the webhook URL', async () => {
    const { webhook, token } = await generate(shop);
    expect(webhook.href).toBe(`${PUBLIC_URL}/${token}`);
    // One path segment of URL-safe characters, carrying the amount it was signed for.
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[0-9a-z]+\.12500\.\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]+$/);
  });

  it('SUCCESS confirms once, with the verified amount and tracking id, after exactly one verify call', async () => {
    const { paymentId, hook } = await generate(shop, { amount: '4500', trackingId: 'order-99' });
    answerVerify(fake, paymentId, { status: 'SUCCESS', amount: 4500, trackingId: 'order-99' });
    const res = await post(hook(), { payment_id: paymentId, status: 'completed' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ received: true });
    expect(shop.outcomes.events.map(([n]) => n)).toEqual([PaymentEvents.CONFIRMED]);
    expect(shop.outcomes.named(PaymentEvents.CONFIRMED)[0].toJSON()).toMatchObject({
      outcome: 'confirmed',
      paymentId,
      amount: '4500',
      developerTrackingId: 'order-99',
      status: 'SUCCESS',
      source: 'webhook',
    });
    expect(verifyCalls(fake, paymentId)).toBe(1);
    const again = await post(hook(), { payment_id: paymentId });
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(shop.outcomes.events).toHaveLength(1);
    expect(verifyCalls(fake, paymentId)).toBe(1);
  });

  it('the longest token (15-digit amount, tracking id) reaches the route, and a longer segment is refused', async () => {
    const { paymentId, hook } = await generate(shop, {
      amount: '999999999999999',
      trackingId: 'order-with-a-rather-long-tracking-identifier',
    });
    answerVerify(fake, paymentId, {
      status: 'SUCCESS',
      amount: 999999999999999,
      trackingId: 'order-with-a-rather-long-tracking-identifier',
    });
    expect((await post(hook(`?payment_id=${paymentId}`), '', null)).status).toBe(200);
    expect(shop.outcomes.named(PaymentEvents.CONFIRMED).map((e) => e.amount)).toEqual(['999999999999999']);
    // A token is at most 80 characters: under Fastify's maxParamLength (100), the `:token` route
    // takes every token; past it Fastify itself refuses the segment (414) before any route runs.
    expect((await post(`${shop.url}/payments/webhook/${'a'.repeat(99)}`, { payment_id: paymentId })).status).toBe(401);
    expect((await post(`${shop.url}/payments/webhook/${'a'.repeat(150)}`, { payment_id: paymentId })).status).toBe(
      adapter === 'fastify' ? 414 : 401,
    );
  });

  it.each([
    ['FAILURE', PaymentEvents.FAILED],
    ['SYSTEM_FAILURE', PaymentEvents.FAILED],
    ['EXPIRED', PaymentEvents.EXPIRED],
    ['PREAUTH_SUCCESS', PaymentEvents.AUTHORIZED],
  ])('%s emits %s and never payment.confirmed', async (status, event) => {
    const { paymentId, hook } = await generate(shop);
    answerVerify(fake, paymentId, { status });
    const res = await post(hook(), { payment_id: paymentId });
    expect(res.status).toBe(200);
    expect(shop.outcomes.events.map(([n, e]) => [n, e.paymentId, e.status])).toEqual([[event, paymentId, status]]);
    expect(await shop.payments.getOutcome(paymentId)).toMatchObject({
      outcome: event.split('.')[1],
      handlers: 'succeeded',
    });
  });

  it.each(['PENDING', 'SETTLING', 'success'])(
    '%s answers 202, emits nothing, and the payment stays queued for reconciliation',
    async (status) => {
      const { paymentId, hook } = await generate(shop);
      answerVerify(fake, paymentId, { status });
      expect(await shop.payments.countPending()).toBe(1);
      const res = await post(hook(), { payment_id: paymentId });
      expect(res.status).toBe(202);
      expect(await res.json()).toEqual({ received: true, pending: true });
      expect(shop.outcomes.events).toEqual([]);
      expect(await shop.payments.countPending()).toBe(1);
      expect(await shop.payments.getOutcome(paymentId)).toMatchObject({ outcome: 'pending', status });
    },
  );

  it.each([
    ['an amount', { status: 'SUCCESS', amount: 100, trackingId: 'order-1' }, /amount 100 instead of 12500/],
    [
      'a tracking id',
      { status: 'SUCCESS', amount: 12500, trackingId: 'order-2' },
      /tracking id "order-2" instead of "order-1"/,
    ],
  ])(
    'SUCCESS with %s that differs from what was sent: payment.mismatch and a mismatch record, never payment.confirmed',
    async (_what, answer, problem) => {
      const { paymentId, hook } = await generate(shop, { trackingId: 'order-1' });
      answerVerify(fake, paymentId, answer);
      const res = await post(hook(), { payment_id: paymentId });
      expect(res.status).toBe(200);
      expect(shop.outcomes.events.map(([n]) => n)).toEqual([PaymentEvents.MISMATCH]);
      expect((shop.outcomes.named(PaymentEvents.MISMATCH)[0] as PaymentMismatchEvent).problems.join()).toMatch(problem);
      expect(await shop.payments.getOutcome(paymentId)).toMatchObject({
        outcome: 'mismatch',
        status: 'SUCCESS',
        lastError: expect.stringMatching(problem),
      });
      // Done: a redelivery neither confirms nor calls the service again.
      await post(hook(), { payment_id: paymentId });
      expect(shop.outcomes.named(PaymentEvents.CONFIRMED)).toEqual([]);
      expect(verifyCalls(fake, paymentId)).toBe(1);
    },
  );

  describe('refused tokens: 401 and no call to the service', () => {
    const other = new WebhookTokenSigner('another-secret-another-secret-0123456789');
    const ours = new WebhookTokenSigner(SECRET);
    it.each([
      ['no token (base path)', (_token: string, base: string) => base],
      ['a garbage token', (_t: string, base: string) => `${base}/abc`],
      ['a token with a forged signature', (t: string, base: string) => `${base}/${forgeSignature(t)}`],
      ['a token with a changed amount', (t: string, base: string) => `${base}/${t.replace('.12500.', '.1.')}`],
      [
        'a token signed with another secret',
        (_t: string, base: string) => `${base}/${other.issue('12500', undefined, 60_000).token}`,
      ],
      ['an expired token', (_t: string, base: string) => `${base}/${ours.issue('12500', undefined, -60_000).token}`],
      [
        'an expired token in the legacy query parameter',
        (_t: string, base: string) => `${base}?webhook_token=${ours.issue('12500', undefined, -60_000).token}`,
      ],
    ])('%s', async (_name, makeUrl) => {
      const { paymentId, token } = await generate(shop);
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      const url = makeUrl(token, `${shop.url}/payments/webhook`);
      const res = await post(`${url}${url.includes('?') ? '&' : '?'}payment_id=${paymentId}`, {
        payment_id: paymentId,
      });
      expect(res.status).toBe(401);
      expect(verifyCalls(fake)).toBe(0);
      expect(shop.outcomes.events).toEqual([]);
    });

    it('a genuine token naming another payment (bound at generation): 401 without a call', async () => {
      const a = await generate(shop);
      const b = await generate(shop);
      answerVerify(fake, b.paymentId, { status: 'SUCCESS' });
      expect((await post(a.hook(), { payment_id: b.paymentId })).status).toBe(401);
      expect((await fetch(a.hook(`?payment_id=${b.paymentId}`))).status).toBe(401);
      expect(verifyCalls(fake)).toBe(0);
      expect(shop.outcomes.events).toEqual([]);
    });
  });

  describe('where the payment id is', () => {
    const cases: Array<[string, (hook: (extra?: string) => string, id: string) => Promise<Response>]> = [
      ['JSON body', (hook, id) => post(hook(), { payment_id: id })],
      [
        'JSON body with an unrelated id beside payment_id',
        (hook, id) => post(hook(), { id: 'evt_778', payment_id: id, object: 'event' }),
      ],
      ['form body', (hook, id) => post(hook(), `payment_id=${id}&status=SUCCESS`, 'application/x-www-form-urlencoded')],
      ['text/plain JSON body', (hook, id) => post(hook(), JSON.stringify({ payment_id: id }), 'text/plain')],
      ['text/plain form body', (hook, id) => post(hook(), `payment_id=${id}`, 'text/plain; charset=utf-8')],
      ['untyped body', (hook, id) => post(hook(), JSON.stringify({ paymentId: id }), null)],
      ['an unknown content type', (hook, id) => post(hook(), `payment_id=${id}`, 'application/octet-stream')],
      ['GET query appended properly', (hook, id) => fetch(hook(`?payment_id=${id}`))],
      ['POST query appended properly, empty body', (hook, id) => post(hook(`?payment_id=${id}`), '', null)],
      ['data.payment_id', (hook, id) => post(hook(), { data: { payment_id: id } })],
      // A service appending `&payment_id=` to a URL without a query: it lands in the token's path segment.
      ['GET &payment_id= appended to a URL without a query', (hook, id) => fetch(hook(`&payment_id=${id}`))],
      [
        'POST &payment_id= appended to a URL without a query, empty body',
        (hook, id) => post(hook(`&payment_id=${id}`), '', null),
      ],
      ['POST ;payment_id= appended, JSON body too', (hook, id) => post(hook(`;payment_id=${id}`), { payment_id: id })],
    ];
    it.each(cases)('%s', async (_name, send) => {
      const { paymentId, hook } = await generate(shop);
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      const res = await send(hook, paymentId);
      expect(res.status).toBe(200);
      expect(shop.outcomes.named(PaymentEvents.CONFIRMED).map((e) => e.paymentId)).toEqual([paymentId]);
    });

    it("an unrelated id in the public URL's own query never beats payment_id, wherever payment_id is", async () => {
      const withId = await startShop(adapter, { options: { webhook: { publicUrl: `${PUBLIC_URL}?id=store7` } } });
      try {
        const sends: Array<[string, (hook: (extra?: string) => string, id: string) => Promise<Response>]> = [
          ['JSON body', (hook, id) => post(hook(), { payment_id: id })],
          ['JSON body with its own unrelated id', (hook, id) => post(hook(), { id: 'evt_1', payment_id: id })],
          ['form body', (hook, id) => post(hook(), `payment_id=${id}`, 'application/x-www-form-urlencoded')],
          ['data.payment_id in the body', (hook, id) => post(hook(), { data: { payment_id: id } })],
          ['GET, &payment_id= appended', (hook, id) => fetch(hook(`&payment_id=${id}`))],
          ['GET, ?payment_id= appended naively', (hook, id) => fetch(hook(`?payment_id=${id}`))],
        ];
        for (const [name, send] of sends) {
          const { paymentId, hook, webhook } = await generate(withId);
          expect(webhook.search).toBe('?id=store7');
          answerVerify(fake, paymentId, { status: 'SUCCESS' });
          const res = await send(hook, paymentId);
          expect([name, res.status]).toEqual([name, 200]);
          expect(verifyCalls(fake, paymentId)).toBe(1);
          expect(verifyCalls(fake, 'store7')).toBe(0);
        }
        expect(withId.outcomes.named(PaymentEvents.CONFIRMED)).toHaveLength(sends.length);
      } finally {
        await withId.close();
      }
    });

    it('400 for malformed bodies, no call, and the payment still confirms afterwards', async () => {
      const { paymentId, hook } = await generate(shop);
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      const bodies: Array<[string, string]> = [
        ['application/json', '{"payment_id": '],
        ['application/json', '[1,2,3]'],
        ['application/json', `{"payment_id": {"$gt": ""}}`],
        ['application/json', `{"payment_id": ["${paymentId}", "x"]}`],
        ['text/plain', '<xml>nope</xml>'],
      ];
      for (const [type, body] of bodies) expect([type, (await post(hook(), body, type)).status]).toEqual([type, 400]);
      expect((await post(hook(), {})).status).toBe(400);
      expect(verifyCalls(fake)).toBe(0);
      expect((await post(hook(), { payment_id: paymentId })).status).toBe(200);
    });

    it('413 for a chunked body over webhook.maxBodyBytes (no Content-Length to check up front), whatever its type; no call', async () => {
      const { paymentId, hook } = await generate(shop);
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      for (const contentType of ['application/json', 'text/plain', 'application/x-www-form-urlencoded', undefined]) {
        const res = await postChunked(hook(), 70_000, { contentType, paymentId });
        expect([contentType, res.status, res.chunked]).toEqual([contentType, 413, true]);
      }
      expect(verifyCalls(fake)).toBe(0);
      // A chunked body under the limit is an ordinary delivery.
      expect((await postChunked(hook(), 2_000, { contentType: 'application/json', paymentId })).status).toBe(200);
      expect(shop.outcomes.named(PaymentEvents.CONFIRMED).map((e) => e.paymentId)).toEqual([paymentId]);
    });

    it('413 for a body over webhook.maxBodyBytes, with or without a type', async () => {
      const { paymentId, hook } = await generate(shop);
      expect((await post(hook(), { payment_id: paymentId, pad: 'x'.repeat(70_000) })).status).toBe(413);
      expect((await post(hook(), `payment_id=${paymentId}&pad=${'x'.repeat(70_000)}`, 'text/plain')).status).toBe(413);
      expect(verifyCalls(fake)).toBe(0);
    });
  });

  it('verify rate-limited (429, Retry-After: 60): one verify call, 503 with Retry-After: 60, nothing emitted', async () => {
    const { paymentId, hook } = await generate(shop);
    fake.reply(`/api/v2/verify_payment/${paymentId}`, { status: 429, body: '', headers: { 'retry-after': '60' } });
    const res = await post(hook(), { payment_id: paymentId });
    expect([res.status, res.headers.get('retry-after')]).toEqual([503, '60']);
    expect(verifyCalls(fake, paymentId)).toBe(1);
    expect(shop.outcomes.events).toEqual([]);
  });

  it('return first, then the late webhook: handlers once, the webhook makes no verify call', async () => {
    const { paymentId, hook } = await generate(shop);
    answerVerify(fake, paymentId, { status: 'SUCCESS' });
    await expect(shop.payments.reconcilePayment(paymentId)).resolves.toEqual({
      paymentId,
      status: 'SUCCESS',
      outcome: 'confirmed',
      handled: true,
    });
    expect(shop.outcomes.named(PaymentEvents.CONFIRMED).map((e) => e.source)).toEqual(['return']);
    const late = await post(hook(), { payment_id: paymentId });
    expect(await late.json()).toEqual({ received: true, duplicate: true });
    expect(verifyCalls(fake, paymentId)).toBe(1);
    expect(shop.outcomes.events).toHaveLength(1);
  });

  it('a webhook and reconcilePayment at once: the handlers run once', async () => {
    const { paymentId, hook } = await generate(shop);
    answerVerify(fake, paymentId, { status: 'SUCCESS' });
    const held = gate();
    shop.outcomes.confirmGate = held.promise;
    const webhook = post(hook(), { payment_id: paymentId });
    await shop.outcomes.confirmEntered.promise;
    const returned = shop.payments.reconcilePayment(paymentId);
    held.release();
    const [res, result] = await Promise.all([webhook, returned]);
    expect(res.status).toBe(200);
    expect(result).toMatchObject({ paymentId, outcome: 'confirmed', handled: false });
    expect(shop.outcomes.named(PaymentEvents.CONFIRMED)).toHaveLength(1);
    expect(verifyCalls(fake, paymentId)).toBe(1);
  });

  it('concurrent duplicate webhooks: the handlers run once, the others get 409 + Retry-After or a duplicate', async () => {
    const { paymentId, hook } = await generate(shop);
    answerVerify(fake, paymentId, { status: 'SUCCESS' });
    const held = gate();
    shop.outcomes.confirmGate = held.promise;
    const first = post(hook(), { payment_id: paymentId });
    await shop.outcomes.confirmEntered.promise;
    const others = await Promise.all(Array.from({ length: 5 }, () => post(hook(), { payment_id: paymentId })));
    expect(others.map((r) => r.status)).toEqual([409, 409, 409, 409, 409]);
    expect(others[0].headers.get('retry-after')).toBe('5');
    held.release();
    expect((await first).status).toBe(200);
    expect(shop.outcomes.named(PaymentEvents.CONFIRMED)).toHaveLength(1);
  });

  it('a failing handler answers 500, stays not done, and the redelivery runs it again', async () => {
    const { paymentId, hook } = await generate(shop);
    answerVerify(fake, paymentId, { status: 'SUCCESS' });
    shop.outcomes.confirmFailures = 1;
    expect((await post(hook(), { payment_id: paymentId })).status).toBe(500);
    expect(await shop.payments.getOutcome(paymentId)).toMatchObject({
      outcome: 'confirmed',
      handlers: 'failed',
      lastError: expect.stringContaining('database down'),
    });
    expect((await post(hook(), { payment_id: paymentId })).status).toBe(200);
    expect(shop.outcomes.named(PaymentEvents.CONFIRMED).map((e) => e.paymentId)).toEqual([paymentId]);
    expect(await shop.payments.getOutcome(paymentId)).toMatchObject({ handlers: 'succeeded', attempts: 2 });
  });

  it('no webhook at all: a reconciliation pass after the session ended confirms', async () => {
    const { paymentId } = await generate(shop, { trackingId: 'order-r' });
    answerVerify(fake, paymentId, { status: 'SUCCESS', trackingId: 'order-r' });
    expect(await shop.payments.runReconciliation(Date.now())).toEqual({ checked: 0, settled: 0 });
    const afterSession = Date.now() + (1200 + 60 + 1) * 1000;
    expect(await shop.payments.runReconciliation(afterSession)).toEqual({ checked: 1, settled: 1 });
    expect(
      shop.outcomes.named(PaymentEvents.CONFIRMED).map((e) => [e.paymentId, e.source, e.developerTrackingId]),
    ).toEqual([[paymentId, 'reconciliation', 'order-r']]);
    expect(await shop.payments.countPending()).toBe(0);
  });
});

/** Two confirmation handlers: one fails fast once, the other is slow (held by a gate). */
@Injectable()
class FastAndSlow {
  fastCalls = 0;
  slowCalls = 0;
  slowFinished = 0;
  slowEntered = gate();
  slowGate = gate();

  @OnPaymentConfirmed()
  async failsFastOnce() {
    this.fastCalls++;
    if (this.fastCalls === 1) throw new Error('fast failure');
  }

  @OnPaymentConfirmed()
  async slow() {
    this.slowCalls++;
    this.slowEntered.release();
    await this.slowGate.promise;
    this.slowFinished++;
  }
}

describe.each(ADAPTERS)('every handler is awaited on Nest-%s', (adapter) => {
  it('one fails fast, one is slow: the answer comes after the slow one, the outcome stays undone, the redelivery runs both again', async () => {
    fake.reset();
    const running = await startNestApp(adapter, {
      imports: [PaymentsModule.forRoot(moduleOptions())],
      providers: [FastAndSlow],
    });
    try {
      const payments = running.app.get(PaymentsService);
      const handlers = running.app.get(FastAndSlow);
      const { paymentId, webhook } = await generateThrough(fake, 'pay_slow', () =>
        payments.generatePayment({ amount: '12500' }),
      );
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      const url = `${running.url}${webhook.pathname}`;
      let finishedWhenAnswered: number | undefined;
      const first = post(url, { payment_id: paymentId }).then((res) => {
        finishedWhenAnswered = handlers.slowFinished;
        return res;
      });
      await handlers.slowEntered.promise;
      // Release the slow handler once the answer came (the bug: answering while it still runs)
      // or after a while (the fix: no answer can come before it).
      await Promise.race([first, new Promise((r) => setTimeout(r, 300))]);
      handlers.slowGate.release();
      expect((await first).status).toBe(500);
      expect(finishedWhenAnswered).toBe(1);
      expect(await payments.getOutcome(paymentId)).toMatchObject({ handlers: 'failed' });

      expect((await post(url, { payment_id: paymentId })).status).toBe(200);
      expect([handlers.fastCalls, handlers.slowCalls, handlers.slowFinished]).toEqual([2, 2, 2]);
      expect(await payments.getOutcome(paymentId)).toMatchObject({ handlers: 'succeeded' });
    } finally {
      await running.close();
    }
  });
});

describe.each(ADAPTERS)('webhook set-ups on Nest-%s', (adapter) => {
  beforeEach(() => fake.reset());

  it('restart between generate and webhook (in-memory store, same secret): confirms once; a replay naming another payment runs nothing', async () => {
    const first = await startShop(adapter);
    const { paymentId, webhook } = await generate(first, { amount: '7000', trackingId: 'order-7' });
    await first.close();

    const second = await startShop(adapter, { options: { webhook: { unsignedIntervalSecs: 1 } } });
    try {
      const url = `${second.url}${webhook.pathname}`;
      // Before the payment confirmed, the token is unbound in the new store: a replay naming
      // another payment is checked against what the token was signed for, and refused.
      answerVerify(fake, 'pay_other', { status: 'SUCCESS', amount: 999, trackingId: 'order-x' });
      expect((await post(url, { payment_id: 'pay_other' })).status).toBe(401);
      expect(await second.payments.getOutcome('pay_other')).toBeUndefined();

      answerVerify(fake, paymentId, { status: 'SUCCESS', amount: 7000, trackingId: 'order-7' });
      // The replay spent the unbound token's one verify per unsignedIntervalSecs: the genuine
      // delivery is told to come back (429 + Retry-After), and is confirmed when it does.
      expect((await post(url, { payment_id: paymentId })).status).toBe(429);
      await new Promise((r) => setTimeout(r, 1100));
      expect((await post(url, { payment_id: paymentId })).status).toBe(200);
      expect(second.outcomes.events.map(([n, e]) => [n, e.paymentId, e.amount, e.developerTrackingId])).toEqual([
        [PaymentEvents.CONFIRMED, paymentId, '7000', 'order-7'],
      ]);

      // Now bound to its payment: a replay naming another one is refused without a call.
      const calls = verifyCalls(fake);
      answerVerify(fake, 'pay_other2', { status: 'SUCCESS', amount: 7000, trackingId: 'order-7' });
      expect((await post(url, { payment_id: 'pay_other2' })).status).toBe(401);
      expect(verifyCalls(fake)).toBe(calls);
      expect(second.outcomes.events).toHaveLength(1);
    } finally {
      await second.close();
    }
  });

  it('a public URL with its own query, and a service appending ?payment_id= naively', async () => {
    const shop = await startShop(adapter, { options: { webhook: { publicUrl: `${PUBLIC_URL}?shop=main` } } });
    try {
      const { paymentId, webhook, token } = await generate(shop);
      expect(webhook.href).toBe(`${PUBLIC_URL}/${token}?shop=main`);
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      const res = await fetch(`${shop.url}${webhook.pathname}${webhook.search}?payment_id=${paymentId}`);
      expect(res.status).toBe(200);
      expect(shop.outcomes.named(PaymentEvents.CONFIRMED).map((e) => e.paymentId)).toEqual([paymentId]);
    } finally {
      await shop.close();
    }
  });

  it('lives under the global prefix and a custom path', async () => {
    const shop = await startShop(adapter, {
      prefix: 'api',
      options: { webhook: { path: '/hooks/pay/', publicUrl: 'https://shop.example/api/hooks/pay' } },
    });
    try {
      const { paymentId, token } = await generate(shop);
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      expect((await post(`${shop.url}/hooks/pay/${token}`, { payment_id: paymentId })).status).toBe(404);
      expect((await post(`${shop.url}/api/hooks/pay/${token}`, { payment_id: paymentId })).status).toBe(200);
      expect(shop.outcomes.named(PaymentEvents.CONFIRMED)).toHaveLength(1);
    } finally {
      await shop.close();
    }
  });

  it('runs each handler once when the host imports EventEmitterModule.forRoot() too', async () => {
    const shop = await startShop(adapter, { hostEmitter: true });
    try {
      const { paymentId, hook } = await generate(shop);
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      expect((await post(hook(), { payment_id: paymentId })).status).toBe(200);
      expect(shop.outcomes.events).toHaveLength(1);
    } finally {
      await shop.close();
    }
  });

  it('works with the raw-body option, a host-wide guard and a host-wide exception filter; host routes keep their parsers', async () => {
    const shop = await startShop(adapter, { rawBody: true, hostGlobals: true });
    try {
      const { paymentId, hook } = await generate(shop);
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      const forged = await post(`${shop.url}/payments/webhook/x`, { payment_id: paymentId });
      expect(forged.status).toBe(401);
      expect(await forged.json()).toEqual({ wrapped: true, status: 401 });
      expect((await post(hook(), `payment_id=${paymentId}`, 'text/plain')).status).toBe(200);
      expect(shop.outcomes.events).toHaveLength(1);
      expect(shop.app.get(AllowAllGuard).calls).toBeGreaterThanOrEqual(2);
      expect((await post(`${shop.url}/bare`, {})).status).toBe(201);
      // Fastify answers 415 to a type it cannot parse, on the host's routes still; Express ignores the body.
      expect((await post(`${shop.url}/bare`, '<a/>', 'application/xml')).status).toBe(
        adapter === 'fastify' ? 415 : 201,
      );
    } finally {
      await shop.close();
    }
  });

  it('with no @OnPaymentConfirmed handler, answers 500 rather than lose the confirmation', async () => {
    const shop = await startShop(adapter, { noHandler: true });
    try {
      const { paymentId, hook } = await generate(shop);
      answerVerify(fake, paymentId, { status: 'SUCCESS' });
      expect((await post(hook(), { payment_id: paymentId })).status).toBe(500);
      expect(await shop.payments.getOutcome(paymentId)).toMatchObject({
        handlers: 'failed',
        lastError: expect.stringContaining('no payment.confirmed handler'),
      });
    } finally {
      await shop.close();
    }
  });

  it('without webhook options the route answers 404 and generatePayment sends no webhook', async () => {
    const running = await startNestApp(adapter, {
      imports: [
        PaymentsModule.forRoot({
          publicKey: 'pk',
          privateKey: 'sk',
          baseUrl: fake.url,
          successLink: 'https://s.example/a',
          failLink: 'https://s.example/b',
        }),
      ],
    });
    try {
      fake.reply('/api/v2/generate_payment', {
        status: 200,
        body: { result: { success: true, payment_id: 'pay_plain', link: 'https://l.example/x' } },
      });
      await running.app.get(PaymentsService).generatePayment({ amount: '1' });
      expect(JSON.parse(fake.requests.at(-1)!.body)).not.toHaveProperty('webhook');
      expect((await post(`${running.url}/payments/webhook/abc`, { payment_id: 'pay_plain' })).status).toBe(404);
    } finally {
      await running.close();
    }
  });
});
