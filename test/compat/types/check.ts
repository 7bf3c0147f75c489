// Type-checked (never run) under moduleResolution node16, nodenext and bundler, against the
// installed tarball: every entry point resolves, and its types are real (not `any`), which the
// `@ts-expect-error` lines prove: each must be an error, or tsc reports the directive unused.
import 'reflect-metadata';
import { Injectable, Module, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Router, type Request } from 'express';
import { Redis } from 'ioredis';
import {
  OnPaymentConfirmed,
  OnPaymentEvent,
  PaymentEvents,
  PaymentsError,
  PaymentsModule,
  PaymentsService,
  RefundNotAllowedError,
  fromMillimes,
  toMillimes,
  type GeneratedPayment,
  type PaymentConfirmedEvent,
  type PaymentRefund,
  type PaymentRefundedEvent,
  type PaymentsModuleOptions,
} from 'nestjs-payments';
import type { PaymentsStore } from 'nestjs-payments/store';
import {
  createPaymentsDesk,
  PaymentsDeskModule,
  type DeskAuthorization,
  type PaymentsDeskHandler,
} from 'nestjs-payments/desk';
import { createPaymentsClient, createWebhookRouter, type PaymentsClient } from 'nestjs-payments/express';
import { paymentsStoreMigration, PostgresPaymentsStore } from 'nestjs-payments/postgres';
import { RedisPaymentsStore } from 'nestjs-payments/redis';
import {
  HEALTH_PROBE_CLIENT_ID,
  PaymentsHealthIndicator,
  type PaymentsHealthCheckOptions,
} from 'nestjs-payments/terminus';
import { PaymentsSandbox, type SandboxSettlement } from 'nestjs-payments/testing';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
function expectType<T extends true>(): T | void {}

// Money helpers.
expectType<Equal<ReturnType<typeof toMillimes>, string>>();
expectType<Equal<ReturnType<typeof fromMillimes>, string>>();

// Nest: module, service, decorators and their options.
@Injectable()
export class Orders {
  @OnPaymentConfirmed()
  async markPaid(event: PaymentConfirmedEvent): Promise<void> {
    const id: string = event.paymentId;
    void id;
  }

  @OnPaymentEvent(PaymentEvents.REFUNDED, { prependListener: true })
  markRefunded(event: PaymentRefundedEvent): void {
    void event.refundId;
  }

  // @ts-expect-error errors of payment handlers always propagate: suppressErrors is not an option
  @OnPaymentConfirmed({ suppressErrors: true })
  swallow(): void {}
}

const options: PaymentsModuleOptions = {
  publicKey: 'pk',
  privateKey: 'sk',
  baseUrl: 'http://127.0.0.1:1',
  webhook: { publicUrl: 'http://127.0.0.1:2/payments/webhook', secret: 'x'.repeat(32) },
};

@Module({
  imports: [PaymentsModule.forRootAsync({ useFactory: async () => options, isGlobal: true })],
  providers: [Orders],
})
export class ShopModule {}

export async function useService(payments: PaymentsService): Promise<void> {
  const generated: GeneratedPayment = await payments.generatePayment({
    amount: toMillimes('12.5'),
    developerTrackingId: 'order-1',
  });
  expectType<Equal<typeof generated.paymentId, string>>();
  const refund: PaymentRefund = await payments.refundPayment(generated.paymentId);
  void refund.refundedAt;
  // @ts-expect-error the amount is millimes, a digit string or an integer
  await payments.generatePayment({ amount: true });
  try {
    await payments.cancelPayment(generated.paymentId);
  } catch (error) {
    if (error instanceof RefundNotAllowedError)
      expectType<Equal<typeof error.code extends string ? true : false, true>>();
    if (error instanceof PaymentsError) void error.code;
  }
}

// Express: the client and the router, with the app's own express types.
export function expressApp(store?: PaymentsStore): Router {
  const client: PaymentsClient = createPaymentsClient({ ...options, store });
  const router: Router = createWebhookRouter({
    client,
    onPaymentConfirmed: async (event) => {
      expectType<Equal<typeof event, PaymentConfirmedEvent>>();
    },
  });
  // @ts-expect-error onPaymentConfirmed is required
  createWebhookRouter({ client });
  return router;
}

// Redis: from a URL or from the app's own ioredis client.
export const stores: PaymentsStore[] = [
  new RedisPaymentsStore('redis://127.0.0.1:6379'),
  new RedisPaymentsStore(new Redis({ lazyConnect: true }), { keyPrefix: 'shop:' }),
  // PostgreSQL: a connection string, or anything with query(text, params) (a pg Pool, PGlite).
  new PostgresPaymentsStore('postgres://shop@127.0.0.1:5432/shop'),
  new PostgresPaymentsStore({ query: async () => ({ rows: [] }) }, { tablePrefix: 'shop_payments_' }),
];
expectType<Equal<ReturnType<typeof paymentsStoreMigration>, string>>();
// @ts-expect-error a store needs a connection string or something that runs queries
new PostgresPaymentsStore(5432);

// Testing: the sandbox.
export async function sandbox(): Promise<SandboxSettlement> {
  const running = await PaymentsSandbox.start({ port: 0 });
  const client = createPaymentsClient(running.options({ webhook: options.webhook }));
  const { paymentId } = await client.generatePayment({ amount: 12500 });
  const settlement = await running.completePayment(paymentId);
  expectType<Equal<typeof settlement.webhook, SandboxSettlement['webhook']>>();
  await running.close();
  return settlement;
}

// Terminus: the health indicator, with the app's own @nestjs/terminus types.
export async function health(indicator: PaymentsHealthIndicator): Promise<boolean> {
  const options: PaymentsHealthCheckOptions = { checkService: true, serviceCacheSecs: 30, registration: 'outlet' };
  const result = await indicator.isHealthy('payments', options);
  expectType<Equal<keyof typeof result, 'payments'>>();
  expectType<Equal<typeof HEALTH_PROBE_CLIENT_ID, 'nestjs-payments-health-probe'>>();
  // @ts-expect-error checkService is a boolean
  await indicator.isHealthy('payments', { checkService: 'yes' });
  return result.payments.status === 'up';
}

// Desk: mounted in Express with the app's own request type, and in Nest behind the app's own guard.
export function deskRouter(client: PaymentsClient): PaymentsDeskHandler<Request> {
  const desk = createPaymentsDesk<Request>({
    client,
    authorize: (req): DeskAuthorization => (req.get('x-user') === 'alice' ? { id: 'alice', name: 'Alice' } : undefined),
    formTtlSecs: 3600,
  });
  Router().use('/desk', desk);
  // @ts-expect-error authorize is required: the desk is never served unguarded
  createPaymentsDesk({ client });
  return desk;
}

@Injectable()
export class StaffGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return context.switchToHttp().getRequest<{ user?: string }>().user !== undefined;
  }
}

@Module({
  imports: [PaymentsDeskModule.forRoot({ path: 'admin/payments', guard: StaffGuard, registration: 'outlet' })],
})
export class AdminModule {}
// @ts-expect-error guard is required: the desk is never served unguarded
void PaymentsDeskModule.forRoot({ path: 'admin/payments' });
