import { Injectable, Module, type DynamicModule } from '@nestjs/common';
import { OnPaymentConfirmed, OnPaymentEvent, PaymentEvents, PaymentsModule, type PaymentConfirmedEvent, type PaymentRefundedEvent, type PaymentsModuleOptions } from 'nestjs-payments';

/** The merchant's reaction to payments: records every event it receives. */
@Injectable()
export class Orders {
  readonly confirmed: PaymentConfirmedEvent[] = [];
  readonly refunded: PaymentRefundedEvent[] = [];

  @OnPaymentConfirmed()
  markPaid(event: PaymentConfirmedEvent): void {
    this.confirmed.push(event);
  }

  @OnPaymentEvent(PaymentEvents.REFUNDED)
  markRefunded(event: PaymentRefundedEvent): void {
    this.refunded.push(event);
  }
}

@Module({})
export class ShopModule {
  static register(options: PaymentsModuleOptions): DynamicModule {
    return { module: ShopModule, imports: [PaymentsModule.forRoot(options)], providers: [Orders] };
  }
}
