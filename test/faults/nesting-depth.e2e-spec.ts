import express from 'express';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Injectable } from '@nestjs/common';
import { MAX_BODY_DEPTH, parseWebhook } from '../../lib/core/webhook/webhook.payload.js';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from '../../lib/express/index.js';
import { OnPaymentConfirmed, PaymentsModule, PaymentsService, type PaymentOutcomeEvent } from '../../lib/index.js';
import { FakeService } from '../support/fake-service.js';
import { quietLogger } from '../support/outcome-kit.js';
import {
  ADAPTERS,
  answerVerify,
  generateThrough,
  startNestApp,
  verifyCalls,
  type RunningApp,
} from '../support/nest-app.js';

// Issue 19 item 3 (finding 4): a body nested thousands deep is refused with 400 and a clear
// message on every front end, before anything walks it recursively; never a 500.

const SECRET = 'whsec_depth_0123456789abcdef0123456789ab';
const PUBLIC_URL = 'https://shop.example/payments/webhook';
const DEEP = 5000;

/** `{"payment_id":"<id>","x":{"a":{"a":...1...}}}`, nested `depth` deep in all. */
function deepObject(paymentId: string, depth: number): string {
  return `{"payment_id":${JSON.stringify(paymentId)},"x":${'{"a":'.repeat(depth - 1)}1${'}'.repeat(depth - 1)}}`;
}
/** `{"payment_id":"<id>","x":[[[...]]]}`, nested `depth` deep in all. */
function deepArray(paymentId: string, depth: number): string {
  return `{"payment_id":${JSON.stringify(paymentId)},"x":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
}

const BODIES = [
  ['objects, application/json', (id: string) => deepObject(id, DEEP), 'application/json'],
  ['arrays, application/json', (id: string) => deepArray(id, DEEP), 'application/json'],
  ['objects, text/plain', (id: string) => deepObject(id, DEEP), 'text/plain'],
  ['arrays, no content type', (id: string) => deepArray(id, DEEP), null],
] as const;

const DEPTH_ERROR = `malformed webhook: body nested deeper than ${MAX_BODY_DEPTH} levels`;

interface FrontEnd {
  /** Where to deliver the webhook of a payment just generated through the plugin. */
  generate(id: string): Promise<string>;
  logs: string[];
  confirmed: string[];
  close(): Promise<void>;
}

let fake: FakeService;
let counter = 0;
beforeAll(async () => {
  fake = await FakeService.start();
});
afterAll(() => fake.close());

function post(url: string, body: string, contentType: string | null) {
  return fetch(url, { method: 'POST', headers: contentType ? { 'content-type': contentType } : {}, body });
}

const confirmedOnNest: string[] = [];
@Injectable()
class Outcomes {
  @OnPaymentConfirmed()
  confirmed(event: PaymentOutcomeEvent) {
    confirmedOnNest.push(event.verification.paymentId);
  }
}

async function nestFrontEnd(adapter: (typeof ADAPTERS)[number]): Promise<FrontEnd> {
  const logs: string[] = [];
  confirmedOnNest.length = 0;
  const running: RunningApp = await startNestApp(adapter, {
    imports: [
      PaymentsModule.forRoot({
        publicKey: 'pk',
        privateKey: 'sk_depth_hidden',
        baseUrl: fake.url,
        successLink: 'https://shop.example/ok',
        failLink: 'https://shop.example/ko',
        reconciliation: { enabled: false },
        webhook: { publicUrl: PUBLIC_URL, secret: SECRET },
        logger: quietLogger(logs),
      }),
    ],
    providers: [Outcomes],
  });
  const payments = running.app.get(PaymentsService);
  return {
    logs,
    confirmed: confirmedOnNest,
    generate: async (id) => {
      const { webhook } = await generateThrough(fake, id, () => payments.generatePayment({ amount: '12500' }));
      return `${running.url}${webhook.pathname}`;
    },
    close: () => running.close(),
  };
}

async function routerFrontEnd(): Promise<FrontEnd> {
  const logs: string[] = [];
  const confirmed: string[] = [];
  const client: PaymentsClient = createPaymentsClient({
    publicKey: 'pk',
    privateKey: 'sk_depth_hidden',
    baseUrl: fake.url,
    successLink: 'https://shop.example/ok',
    failLink: 'https://shop.example/ko',
    reconciliation: { enabled: false },
    webhook: { publicUrl: PUBLIC_URL, secret: SECRET },
    logger: quietLogger(logs),
  });
  const app = express();
  app.use(
    '/payments/webhook',
    createWebhookRouter({ client, onPaymentConfirmed: (e) => void confirmed.push(e.verification.paymentId) }),
  );
  const server: Server = app.listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    logs,
    confirmed,
    generate: async (id) => {
      const { webhook } = await generateThrough(fake, id, () => client.generatePayment({ amount: '12500' }));
      return `${base}${webhook.pathname}`;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
      await client.close();
    },
  };
}

const FRONT_ENDS = [
  ...ADAPTERS.map((adapter) => [`Nest-${adapter}`, () => nestFrontEnd(adapter)] as const),
  ['the Express router', routerFrontEnd] as const,
];

describe.each(FRONT_ENDS)('deeply nested bodies on %s', (name, start) => {
  let front: FrontEnd;
  beforeAll(async () => {
    fake.reset();
    front = await start();
  });
  afterAll(() => front.close());

  it.each(BODIES)(
    `${DEEP} deep (%s), with a valid token: 400 with a clear message, no verify, nothing logged as an error`,
    async (_kind, body, type) => {
      const id = `pay_deep_${++counter}`;
      const hook = await front.generate(id);
      answerVerify(fake, id, { status: 'SUCCESS', amount: 12500 });
      const text = body(id);
      expect(text.length).toBeGreaterThan(type === null || !text.includes('"a"') ? 9_000 : 30_000);
      const res = await post(hook, text, type);
      expect([res.status, await res.json()]).toEqual([400, { received: false, error: DEPTH_ERROR }]);
      expect(verifyCalls(fake, id)).toBe(0);
      expect(front.confirmed).not.toContain(id);
      expect(front.logs.filter((l) => /RangeError|stack/i.test(l))).toEqual([]);
    },
  );

  it(`${MAX_BODY_DEPTH} levels are accepted: the same payment is then confirmed`, async () => {
    const id = `pay_deep_${++counter}`;
    const hook = await front.generate(id);
    answerVerify(fake, id, { status: 'SUCCESS', amount: 12500 });
    const res = await post(hook, deepObject(id, MAX_BODY_DEPTH), 'application/json');
    expect([res.status, await res.json()]).toEqual([200, { received: true }]);
    expect(front.confirmed).toContain(id);
    const deeper = await post(hook, deepArray(id, MAX_BODY_DEPTH + 1), 'application/json');
    expect(deeper.status).toBe(400);
  });
});

describe('parseWebhook: the depth rule, without a server', () => {
  it.each([
    ['a parsed object', () => JSON.parse(deepObject('pay_1', 100_000)) as unknown],
    ['a string', () => deepObject('pay_1', 100_000)],
    ['a Buffer', () => Buffer.from(deepArray('pay_1', 100_000))],
  ])('%s 100 000 deep: refused, not a stack overflow', (_kind, body) => {
    expect(parseWebhook({ query: {}, body: body() }, 10_000_000)).toEqual({
      ok: false,
      reason: `body nested deeper than ${MAX_BODY_DEPTH} levels`,
    });
  });

  it('brackets inside strings are not nesting, and a form body with brackets is still form data', () => {
    const inString = `{"payment_id":"pay_2","note":${JSON.stringify('['.repeat(1000) + '{'.repeat(1000))}}`;
    expect(parseWebhook({ query: {}, body: inString }, 100_000)).toMatchObject({ ok: true, paymentId: 'pay_2' });
    expect(parseWebhook({ query: {}, body: `payment_id=pay_3&note=${'['.repeat(100)}` }, 100_000)).toMatchObject({
      ok: true,
      paymentId: 'pay_3',
    });
  });

  it('a cyclic object (a host parser could build one) is refused, not walked forever', () => {
    const body: Record<string, unknown> = { payment_id: 'pay_4' };
    body.self = body;
    expect(parseWebhook({ query: {}, body }, 100_000)).toEqual({
      ok: false,
      reason: `body nested deeper than ${MAX_BODY_DEPTH} levels`,
    });
  });
});
