// The merchant's side of every Nest compatibility app (test/compat/apps/nest*): run.sh copies
// this file into each app's src/. What differs between the apps is chosen by `ShopOptions`.
import { Inject, Injectable, Module, type DynamicModule } from '@nestjs/common';
import {
  OnPaymentConfirmed,
  OnPaymentEvent,
  PaymentEvents,
  PaymentsModule,
  type PaymentConfirmedEvent,
  type PaymentRefundedEvent,
  type PaymentsModuleOptions,
} from 'nestjs-payments';

export interface ShopOptions {
  /** The plugin's options; by default given to `PaymentsModule.forRoot()`. */
  readonly payments: () => PaymentsModuleOptions;
  /** Configure the plugin through `PaymentsModule.forRootAsync({ useFactory })` instead, as an app reading its configuration would. */
  readonly forRootAsync?: boolean;
  /** The confirmation handler awaits this many ms first, like a database write; without it, the handler is synchronous. */
  readonly confirmDelayMs?: number;
}

const SHOP_OPTIONS = Symbol('ShopOptions');

/** The merchant's reaction to payments: records every event it receives. */
@Injectable()
export class Orders {
  readonly confirmed: PaymentConfirmedEvent[] = [];
  readonly refunded: PaymentRefundedEvent[] = [];

  constructor(@Inject(SHOP_OPTIONS) private readonly shop: ShopOptions) {}

  @OnPaymentConfirmed()
  markPaid(event: PaymentConfirmedEvent): void | Promise<void> {
    const delay = this.shop.confirmDelayMs;
    if (delay === undefined) {
      this.confirmed.push(event);
      return;
    }
    return new Promise<void>((resolve) => setTimeout(resolve, delay)).then(() => {
      this.confirmed.push(event);
    });
  }

  @OnPaymentEvent(PaymentEvents.REFUNDED)
  markRefunded(event: PaymentRefundedEvent): void {
    this.refunded.push(event);
  }
}

@Module({})
export class ShopModule {
  static register(shop: ShopOptions): DynamicModule {
    const payments = shop.forRootAsync
      ? PaymentsModule.forRootAsync({ useFactory: shop.payments })
      : PaymentsModule.forRoot(shop.payments());
    return { module: ShopModule, imports: [payments], providers: [Orders, { provide: SHOP_OPTIONS, useValue: shop }] };
  }
}
