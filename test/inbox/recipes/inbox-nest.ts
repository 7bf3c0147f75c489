// file: inbox-nest.ts
import { Inject, Injectable, Module, type DynamicModule } from '@nestjs/common';
import {
  OnPaymentConfirmed,
  PaymentsModule,
  type PaymentConfirmedEvent,
  type PaymentsModuleOptions,
} from 'nestjs-payments';
import type { PaymentsInbox } from 'nestjs-payments/store';

/** A recipe's confirmation handler: `markPaidWithPg`, `markPaidWithPrisma`... */
export type InboxHandler = (event: PaymentConfirmedEvent) => Promise<void>;

const INBOX_HANDLER = Symbol('INBOX_HANDLER');

/** Marks the order paid with the recipe's handler, in the transaction that inserts the payment's inbox row. */
@Injectable()
export class PaidOrders {
  constructor(@Inject(INBOX_HANDLER) private readonly markPaidWith: InboxHandler) {}

  @OnPaymentConfirmed()
  async markPaid(event: PaymentConfirmedEvent): Promise<void> {
    await this.markPaidWith(event);
  }
}

/** The plugin with a recipe's inbox, and the provider that runs the recipe's handler. */
@Module({})
export class InboxPaymentsModule {
  /**
   * `inbox` builds the recipe's inbox on your database (`() => pgInbox(pool)`), `markPaid` is the
   * recipe's handler (`markPaidWithPg`), `payments` the plugin's other options.
   */
  static forRoot(
    inbox: () => PaymentsInbox | Promise<PaymentsInbox>,
    markPaid: InboxHandler,
    payments: PaymentsModuleOptions,
  ): DynamicModule {
    return {
      module: InboxPaymentsModule,
      imports: [PaymentsModule.forRootAsync({ useFactory: async () => ({ ...payments, inbox: await inbox() }) })],
      providers: [{ provide: INBOX_HANDLER, useValue: markPaid }, PaidOrders],
    };
  }
}
