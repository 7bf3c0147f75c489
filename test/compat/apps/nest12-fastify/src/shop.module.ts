import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import {
  OnPaymentConfirmed,
  OnPaymentEvent,
  PaymentEvents,
  PaymentsModule,
  type PaymentConfirmedEvent,
  type PaymentRefundedEvent,
  type PaymentsModuleOptions,
} from 'nestjs-payments';

/** The merchant's reaction to payments: records every event it receives. */
@Injectable()
export class Orders {
  readonly confirmed: PaymentConfirmedEvent[] = [];
  readonly refunded: PaymentRefundedEvent[] = [];

  @OnPaymentConfirmed()
  async markPaid(event: PaymentConfirmedEvent): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 20)); // an awaited handler, like a database write
    this.confirmed.push(event);
  }

  @OnPaymentEvent(PaymentEvents.REFUNDED)
  markRefunded(event: PaymentRefundedEvent): void {
    this.refunded.push(event);
  }
}

@Module({})
export class ShopModule {
  /** Configured through `forRootAsync`, as an app reading its configuration would. */
  static register(options: () => PaymentsModuleOptions): DynamicModule {
    return { module: ShopModule, imports: [PaymentsModule.forRootAsync({ useFactory: options })], providers: [Orders] };
  }
}
