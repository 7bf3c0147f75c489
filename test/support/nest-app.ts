import type { DynamicModule, INestApplication, Provider, Type } from '@nestjs/common';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { Test, type TestingModuleBuilder } from '@nestjs/testing';
import type { FakeService } from './fake-service.js';
import { generateAnswer, verifyAnswer, verifyPath } from './verify-answers.js';

/** The two HTTP platforms every Nest e2e suite runs on. */
export const ADAPTERS = ['express', 'fastify'] as const;
export type AdapterName = (typeof ADAPTERS)[number];

/** A running Nest app on a loopback port. */
export interface RunningApp {
  app: INestApplication;
  /** `http://127.0.0.1:<port>` */
  url: string;
  close(): Promise<void>;
}

/** Starts a Nest app with the given imports, providers and controllers on Express or Fastify. */
export async function startNestApp(
  adapter: AdapterName,
  metadata: { imports?: Array<DynamicModule | Type>; providers?: Provider[]; controllers?: Type[] },
  options: {
    prefix?: string;
    rawBody?: boolean;
    override?: (builder: TestingModuleBuilder) => TestingModuleBuilder;
  } = {},
): Promise<RunningApp> {
  let builder = Test.createTestingModule({
    imports: metadata.imports ?? [],
    providers: metadata.providers ?? [],
    controllers: metadata.controllers ?? [],
  });
  if (options.override) builder = options.override(builder);
  const moduleRef = await builder.compile();
  const appOptions = { logger: false as const, rawBody: options.rawBody };
  const app: INestApplication =
    adapter === 'fastify'
      ? moduleRef.createNestApplication(new FastifyAdapter(), appOptions)
      : moduleRef.createNestApplication(appOptions);
  if (options.prefix) app.setGlobalPrefix(options.prefix);
  await app.listen(0, '127.0.0.1');
  const url = (await app.getUrl()).replace('[::1]', '127.0.0.1').replace('localhost', '127.0.0.1');
  return { app, url, close: () => app.close() };
}

/**
 * Answers the next generate_payment with `paymentId`, calls `generate`, and returns the signed
 * webhook URL the plugin sent with it (read from the request the fake received).
 */
export async function generateThrough(
  fake: FakeService,
  paymentId: string,
  generate: () => Promise<unknown>,
): Promise<{ paymentId: string; webhook: URL; token: string }> {
  fake.reply('/api/v2/generate_payment', { status: 200, body: generateAnswer(paymentId) });
  await generate();
  const sent = [...fake.requests].reverse().find((r) => r.path === '/api/v2/generate_payment');
  const webhook = new URL((JSON.parse(sent!.body) as { webhook: string }).webhook);
  return { paymentId, webhook, token: webhook.pathname.split('/').at(-1)! };
}

/** Makes the fake answer every verify_payment of `paymentId` with `status` (and amount / tracking id). */
export function answerVerify(
  fake: FakeService,
  paymentId: string,
  answer: { status: string; amount?: number; trackingId?: string },
): void {
  fake.always(verifyPath(paymentId), { status: 200, body: verifyAnswer(answer) });
}

/** How many verify_payment calls of `paymentId` (any when omitted) the fake received. */
export function verifyCalls(fake: FakeService, paymentId?: string): number {
  return fake.requests.filter((r) =>
    paymentId === undefined ? r.path.startsWith('/api/v2/verify_payment/') : r.path === verifyPath(paymentId),
  ).length;
}
