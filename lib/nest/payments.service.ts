import { Inject, Injectable, type OnApplicationShutdown, type OnModuleDestroy } from '@nestjs/common';
import { inspect } from 'node:util';
import type { PaymentsClient } from '../core/client/index.js';
import { PAYMENTS_CLIENT } from './payments.tokens.js';

/** The client methods a `PaymentsService` offers, each delegated to its registration's client as is. */
const DELEGATED = [
  'generatePayment',
  'verifyPayment',
  'capturePayment',
  'reconcilePayment',
  'refundPayment',
  'cancelPayment',
  'listBindings',
  'getOutcome',
  'listOutcomes',
  'countPending',
  'runReconciliation',
] as const satisfies ReadonlyArray<keyof PaymentsClient>;

/** The delegated methods, typed and documented as `PaymentsClient` declares them. */
type DelegatedMethods = Pick<PaymentsClient, (typeof DELEGATED)[number]>;

// Declaration merging: the class below has the client's methods (added to its prototype after it).
// eslint-disable-next-line @typescript-eslint/no-empty-object-type, @typescript-eslint/no-unsafe-declaration-merging -- the methods are installed below
export interface PaymentsService extends DelegatedMethods {}

/**
 * The service's operations for Nest apps: a thin front end over one registration's
 * `PaymentsClient`, whose methods it offers as they are (`generatePayment`, `verifyPayment`,
 * `capturePayment`, `reconcilePayment`, `refundPayment`, `cancelPayment`, `listBindings`,
 * `getOutcome`, `listOutcomes`, `countPending`, `runReconciliation`). Inject it by type (the
 * default registration) or with `@InjectPayments(name)`. Outcomes, captures, refunds and
 * cancellations reach the `@OnPayment…` listeners through the module's event bridge.
 *
 * Lifecycle: when the module is destroyed, webhooks in flight finish (new ones get 503 and are
 * delivered again); on application shutdown the client closes (reconciliation stops, keep-alive
 * sockets and the store's own connections close).
 */
@Injectable()
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging -- the interface above declares the delegated methods
export class PaymentsService implements OnModuleDestroy, OnApplicationShutdown {
  /** @param client the registration's core client */
  constructor(@Inject(PAYMENTS_CLIENT) private readonly client: PaymentsClient) {}

  /** The registration's `name`, if it has one. */
  get registration(): string | undefined {
    return this.client.name;
  }

  /** Lets webhooks in flight finish; new ones get 503 (delivered again later). */
  async onModuleDestroy(): Promise<void> {
    await this.client.webhooks.drain();
  }

  /** Closes the client: reconciliation stops, sockets and the store's own connections close. */
  async onApplicationShutdown(): Promise<void> {
    await this.client.close();
  }

  /** Shows what is safe to show: never the private key. */
  [inspect.custom](): string {
    return `PaymentsService { client: ${inspect(this.client)} }`;
  }

  /** Serialises without credentials. */
  toJSON(): Record<string, unknown> {
    return { client: this.client.toJSON() };
  }
}

for (const name of DELEGATED) {
  Object.defineProperty(PaymentsService.prototype, name, {
    value: function (this: { client: PaymentsClient }, ...args: unknown[]): unknown {
      return (this.client[name] as (...a: unknown[]) => unknown).apply(this.client, args);
    },
    writable: true,
    configurable: true,
  });
}

/**
 * The injection token of a registration's `PaymentsService`.
 * @param name the registration's `name`; omitted: the default registration (the `PaymentsService` class)
 */
export function getPaymentsServiceToken(name?: string): string | typeof PaymentsService {
  return name === undefined ? PaymentsService : `nestjs-payments:service:${name}`;
}
