import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable, type INestApplication } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import fc from 'fast-check';
import http from 'node:http';
import { OnPaymentConfirmed, PaymentsModule, PaymentsService, WEBHOOK_TOKEN_PARAM, type PaymentConfirmedEvent } from '../../lib/index.js';
import { WebhookTokenSigner } from '../../lib/core/webhook.token.js';
import { FakeService, OK, PATHS } from '../support/fake-service.js';
import { collectUnhandledRejections, settle } from '../faults/support/guards.js';

// Random webhook requests against a Nest app. Properties:
// - an event is only ever emitted for a payment P when the request carried exactly one
//   webhook token, a genuine one bound to P, and no payment id in it names another payment;
// - no 5xx unless the handler was told to fail (and then only for an authentic request);
// - a well-formed authentic confirmation is accepted (200) and runs the handler exactly once.

const SECRET = 'whsec_property_0123456789abcdef0123456789';
const PAYMENTS = 48;
const FAILING = 8; // payments 0..7: the handler always throws
const RUNS = Number(process.env.PROPERTY_RUNS ?? 1500);

@Injectable()
class Handler {
  readonly runs: Array<{ paymentId: string; rid: string | undefined; event: PaymentConfirmedEvent }> = [];
  readonly failFor = new Set<string>();

  @OnPaymentConfirmed()
  onConfirmed(event: PaymentConfirmedEvent) {
    const rid = typeof event.query.rid === 'string' ? event.query.rid : undefined;
    if (this.failFor.has(event.paymentId)) throw new Error('told to fail');
    this.runs.push({ paymentId: event.paymentId, rid, event });
  }
}

interface Payment {
  paymentId: string;
  token: string;
}

type TokenChoice =
  | { kind: 'genuine'; i: number }
  | { kind: 'badSignature'; i: number }
  | { kind: 'signedButUnbound' }
  | { kind: 'random' }
  | { kind: 'junk'; text: string };
type IdValue = { kind: 'own' } | { kind: 'other'; i: number } | { kind: 'junk'; value: unknown };
type IdPlace = { where: 'query' | 'body'; key: 'payment_id' | 'paymentId' | 'id' | 'result.payment_id'; value: IdValue };
interface Model {
  method: 'GET' | 'POST' | 'PUT';
  tokens: readonly TokenChoice[];
  ids: IdPlace[];
  body: 'json' | 'form' | 'text' | 'none' | 'bytes' | 'huge';
  contentType: string | undefined;
  extraQuery: string;
  extraBody: Record<string, string | number | boolean>;
  junkText: string;
}

const CONTENT_TYPES = [
  'application/json', 'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/x-www-form-urlencoded', 'text/plain', 'text/html',
  'multipart/form-data; boundary=xyz', 'application/xml', 'application/octet-stream', 'application/json; charset=utf-16', 'application/vnd.api+json', 'garbage/',
];

const b64 = fc.string({ unit: fc.constantFrom(...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'), minLength: 1, maxLength: 70 });
const tokenChoice: fc.Arbitrary<TokenChoice> = fc.oneof(
  { weight: 6, arbitrary: fc.nat(PAYMENTS - 1).map((i) => ({ kind: 'genuine' as const, i })) },
  { weight: 1, arbitrary: fc.nat(PAYMENTS - 1).map((i) => ({ kind: 'badSignature' as const, i })) },
  { weight: 1, arbitrary: fc.constant({ kind: 'signedButUnbound' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'random' as const }) },
  { weight: 1, arbitrary: fc.oneof(b64, fc.string({ unit: 'binary', maxLength: 30 })).map((text) => ({ kind: 'junk' as const, text })) },
);
const idValue: fc.Arbitrary<IdValue> = fc.oneof(
  { weight: 5, arbitrary: fc.constant({ kind: 'own' as const }) },
  { weight: 2, arbitrary: fc.nat(PAYMENTS - 1).map((i) => ({ kind: 'other' as const, i })) },
  { weight: 2, arbitrary: fc.oneof(fc.string({ unit: 'binary', maxLength: 20 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constant(''), fc.array(fc.string(), { maxLength: 2 }), fc.object({ maxDepth: 1 }), fc.constant('x'.repeat(300))).map((value) => ({ kind: 'junk' as const, value })) },
);
const model: fc.Arbitrary<Model> = fc.record({
  method: fc.constantFrom('GET', 'POST', 'POST', 'PUT'),
  tokens: fc.oneof({ weight: 8, arbitrary: fc.array(tokenChoice, { minLength: 1, maxLength: 1 }) }, { weight: 1, arbitrary: fc.constant([] as TokenChoice[]) }, { weight: 1, arbitrary: fc.array(tokenChoice, { minLength: 2, maxLength: 3 }) }),
  ids: fc.array(fc.record({ where: fc.constantFrom('query', 'body'), key: fc.constantFrom('payment_id', 'paymentId', 'id', 'result.payment_id'), value: idValue }), { maxLength: 3 }),
  body: fc.constantFrom('json', 'json', 'form', 'text', 'none', 'bytes', 'huge'),
  contentType: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(...CONTENT_TYPES) }),
  extraQuery: fc.oneof({ weight: 4, arbitrary: fc.constant('') }, { weight: 1, arbitrary: fc.constantFrom('&a[b]=c', '&%zz', '&&&=', '&rid=dup', '&x=%E0%A4%A', '&status=completed&amount=1') }, { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map((s) => `&${encodeURIComponent(s.replace(/\p{Cs}/gu, ''))}`) }),
  extraBody: fc.dictionary(fc.constantFrom('status', 'amount', 'note', 'result_code', 'x'), fc.oneof(fc.string({ maxLength: 10 }), fc.integer(), fc.boolean()), { maxKeys: 2 }),
  junkText: fc.string({ unit: 'binary', maxLength: 40 }),
});

function setPath(target: Record<string, unknown>, key: string, value: unknown) {
  if (key === 'result.payment_id') target.result = { ...(target.result as object), payment_id: value };
  else target[key] = value;
}

describe.each(['express', 'fastify'] as const)('random webhook requests on the %s adapter', (adapter) => {
  const rejections = collectUnhandledRejections();
  let fake: FakeService;
  let app: INestApplication;
  let handler: Handler;
  let port: number;
  let agent: http.Agent;
  const payments: Payment[] = [];
  const signer = new WebhookTokenSigner(SECRET);
  const done = new Set<string>();
  let rid = 0;

  beforeAll(async () => {
    fake = await FakeService.start();
    const moduleRef = await Test.createTestingModule({
      imports: [PaymentsModule.forRoot({
        publicKey: 'pk',
        privateKey: 'sk_property_private',
        baseUrl: fake.url,
        successLink: 'https://shop.example/ok',
        failLink: 'https://shop.example/ko',
        webhook: { publicUrl: 'https://shop.example/payments/webhook', secret: SECRET },
        logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
      })],
      providers: [Handler],
    }).compile();
    app = adapter === 'fastify' ? moduleRef.createNestApplication(new FastifyAdapter(), { logger: false }) : moduleRef.createNestApplication({ logger: false });
    await app.listen(0, '127.0.0.1');
    port = (app.getHttpServer().address() as { port: number }).port;
    handler = app.get(Handler);
    const service = app.get(PaymentsService);
    for (let i = 0; i < PAYMENTS; i++) {
      const paymentId = `pay_${adapter}_${i}`;
      fake.reply(PATHS.generate, OK.generate(paymentId));
      await service.generatePayment({ amount: String(100 + i) });
      const token = new URL(JSON.parse(fake.requests.at(-1)!.body).webhook).searchParams.get(WEBHOOK_TOKEN_PARAM)!;
      payments.push({ paymentId, token });
      if (i < FAILING) handler.failFor.add(paymentId);
    }
    agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  });

  afterAll(async () => {
    agent.destroy();
    await app.close();
    await fake.close();
    await settle();
    rejections.stop();
    expect(rejections.seen).toEqual([]);
  });

  function tokenText(t: TokenChoice): string {
    switch (t.kind) {
      case 'genuine':
        return payments[t.i].token;
      case 'badSignature': {
        const [nonce, sig] = payments[t.i].token.split('.');
        return `${nonce}.${sig.slice(0, -1)}${sig.endsWith('A') ? 'B' : 'A'}`;
      }
      case 'signedButUnbound':
        return signer.issue().token;
      case 'random':
        return `${'r'.repeat(24)}.${'s'.repeat(43)}`;
      case 'junk':
        return t.text.replace(/\p{Cs}/gu, '');
    }
  }

  /** Turns a model into raw request parts. */
  function build(m: Model, id: string) {
    const tokenOf = m.tokens.length === 1 && m.tokens[0].kind === 'genuine' ? payments[m.tokens[0].i] : undefined;
    const own = tokenOf?.paymentId ?? payments[0].paymentId;
    const valueOf = (v: IdValue): unknown => (v.kind === 'own' ? own : v.kind === 'other' ? payments[v.i].paymentId : v.value);
    const query = new URLSearchParams();
    query.set('rid', id);
    for (const t of m.tokens) query.append(WEBHOOK_TOKEN_PARAM, tokenText(t));
    const bodyObject: Record<string, unknown> = { ...m.extraBody };
    for (const place of m.ids) {
      const value = valueOf(place.value);
      if (place.where === 'query') query.append(place.key === 'result.payment_id' ? 'result[payment_id]' : place.key, typeof value === 'string' ? value : JSON.stringify(value) ?? '');
      else setPath(bodyObject, place.key, value);
    }
    let body: Buffer | undefined;
    let contentType = m.contentType;
    switch (m.body) {
      case 'json':
        body = Buffer.from(JSON.stringify(bodyObject));
        contentType ??= 'application/json';
        break;
      case 'form': {
        const form = new URLSearchParams();
        for (const [k, v] of Object.entries(bodyObject)) {
          if (k === 'result' && typeof v === 'object' && v) form.append('result[payment_id]', String((v as Record<string, unknown>).payment_id));
          else form.append(k, typeof v === 'string' ? v : JSON.stringify(v) ?? '');
        }
        body = Buffer.from(form.toString());
        contentType ??= 'application/x-www-form-urlencoded';
        break;
      }
      case 'text':
        body = Buffer.from(m.junkText);
        contentType ??= 'text/plain';
        break;
      case 'bytes':
        body = Buffer.from(m.junkText + JSON.stringify(bodyObject), 'latin1');
        contentType ??= 'application/json';
        break;
      case 'huge':
        body = Buffer.from(JSON.stringify({ ...bodyObject, padding: 'p'.repeat(70_000) }));
        contentType ??= 'application/json';
        break;
      case 'none':
        break;
    }
    if (m.method === 'GET' && m.body !== 'none' && m.body !== 'huge') body = undefined; // a GET mostly comes without a body
    const path = `/payments/webhook?${query.toString()}${m.extraQuery.replace(/webhook_token|rid=/gi, 'x')}`;
    return { path, body, contentType, tokenOf, own };
  }

  function send(method: string, path: string, body: Buffer | undefined, contentType: string | undefined): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string | number> = {};
      if (body) headers['content-length'] = body.length;
      if (contentType && body) headers['content-type'] = contentType;
      const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  const ID_KEYS = ['payment_id', 'paymentId', 'id'];
  const idsIn = (o: Record<string, unknown>) => {
    const found: unknown[] = ID_KEYS.map((k) => o[k]);
    if (typeof o.result === 'object' && o.result !== null) found.push((o.result as Record<string, unknown>).payment_id);
    return found.flat().filter((v) => v !== undefined && v !== null && v !== '');
  };

  it('a payment id repeated with one value (?payment_id=X&payment_id=X) confirms; copies that differ are 400', async () => {
    const p = payments[PAYMENTS - 1];
    const differ = await send('POST', `/payments/webhook?${WEBHOOK_TOKEN_PARAM}=${p.token}&payment_id=${p.paymentId}&payment_id=pay_other`, Buffer.from('{}'), 'application/json');
    expect(differ.status).toBe(400);
    const same = await send('POST', `/payments/webhook?${WEBHOOK_TOKEN_PARAM}=${p.token}&payment_id=${p.paymentId}&payment_id=${p.paymentId}`, Buffer.from('{}'), 'application/json');
    expect(same.status).toBe(200);
    expect(handler.runs.map((r) => r.paymentId)).toEqual([p.paymentId]);
    done.add(p.paymentId);
  });

  it(`${RUNS} random requests: events only for genuine tokens of that payment, no 5xx unless told, valid ones accepted`, async () => {
    let accepted = 0;
    let refused = 0;
    await fc.assert(
      fc.asyncProperty(model, async (m) => {
        const id = String(++rid);
        const { path, body, contentType, tokenOf, own } = build(m, id);
        const runsBefore = handler.runs.length;
        const { status, text } = await send(m.method, path, body, contentType);
        const newRuns = handler.runs.slice(runsBefore);

        // The model follows the server first, so that a failed assertion cannot leave it behind
        // (fast-check replays smaller cases against the same app while shrinking).
        const twice = newRuns.filter((run) => done.has(run.paymentId)).map((run) => run.paymentId);
        for (const run of newRuns) done.add(run.paymentId);

        // 1. Every event: a single genuine token bound to that payment; no other payment named.
        expect(twice).toEqual([]); // never twice
        for (const run of newRuns) {
          expect(run.rid).toBe(id);
          expect(tokenOf?.paymentId).toBe(run.paymentId);
          for (const named of [...idsIn(run.event.payload), ...idsIn(run.event.query)]) expect(String(named)).toBe(run.paymentId);
        }
        expect(newRuns.length).toBeLessThanOrEqual(1);

        // 2. No 5xx unless the handler was told to fail, for an authentic delivery of that payment.
        if (status >= 500) {
          expect({ status, authenticFailing: tokenOf !== undefined && handler.failFor.has(tokenOf.paymentId) }).toEqual({ status: 500, authenticFailing: true });
        }
        expect(text).not.toContain(SECRET);

        // 3. A well-formed authentic confirmation is accepted.
        const wellFormed =
          tokenOf !== undefined &&
          (m.method === 'GET' || m.method === 'POST') &&
          m.ids.every((p) => p.value.kind === 'own' && !(p.where === 'query' && p.key === 'result.payment_id')) &&
          m.contentType === undefined &&
          m.extraQuery === '' &&
          (m.method === 'GET' ? m.body === 'none' : m.body === 'json' || m.body === 'form' || m.body === 'none');
        if (wellFormed) {
          const failing = handler.failFor.has(own);
          const expected = failing ? 500 : 200;
          expect({ status, path: path.slice(0, 200) }).toEqual({ status: expected, path: path.slice(0, 200) });
          if (!failing) expect(done.has(own)).toBe(true);
        }
        if (status === 200) accepted++;
        else refused++;
      }),
      { numRuns: RUNS },
    );
    // Both sides were exercised, and most genuine payments got confirmed along the way.
    expect(accepted).toBeGreaterThan(RUNS / 10);
    expect(refused).toBeGreaterThan(RUNS / 10);
    expect(done.size).toBeGreaterThan((PAYMENTS - FAILING) / 2);
    for (const p of payments.slice(0, FAILING)) expect(done.has(p.paymentId)).toBe(false);
  });
});
