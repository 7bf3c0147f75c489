// The harness's own module of the guides projects (test/compat/guides): it imports what the guides'
// snippets export, pasted verbatim into src/guides/ by prepare.mjs, and adds only what a shop would
// write itself: a route that takes a payment on either account, and a confirmation handler that
// counts. The snippets are loaded by name at run time (their files exist only in the project).
import { Body, Controller, Get, Injectable, Module, Post, type DynamicModule, type Type } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import {
  getPaymentsServiceToken,
  OnPaymentConfirmed,
  PaymentsService,
  type PaymentConfirmedEvent,
} from 'nestjs-payments';

/** Every confirmation this instance's handler ran, as `<registration>:<payment id>`. */
@Injectable()
export class Ledger {
  readonly entries: string[] = [];

  @OnPaymentConfirmed()
  confirmed(event: PaymentConfirmedEvent): void {
    this.entries.push(`${event.registration ?? 'default'}:${event.paymentId}`);
  }
}

@Controller('shop')
export class ShopController {
  constructor(
    private readonly moduleRef: ModuleRef,
    private readonly ledger: Ledger,
  ) {}

  /** Takes a payment on the default account or on `outlet`. */
  @Post('pay')
  async pay(@Body() body: { account?: string; amount: string; order: string }) {
    // The outlet's registration lives in the guide's OutletModule, which exports nothing.
    const payments = this.moduleRef.get<PaymentsService>(
      getPaymentsServiceToken(body.account === 'outlet' ? 'outlet' : undefined),
      { strict: false },
    );
    return payments.generatePayment({ amount: body.amount, developerTrackingId: body.order });
  }

  @Get('ledger')
  list(): string[] {
    return this.ledger.entries;
  }
}

/** What main.ts loads from the pasted snippets. */
export interface GuideModules {
  /** The store's registration of docs/stores.md (Redis or PostgreSQL), or the exactly-once recipe's. */
  store: Type | DynamicModule;
  /** docs/configuration.md's second account. */
  outlet: Type;
  /** docs/operations.md's health module. */
  health: Type;
}

@Module({})
export class AppModule {
  static register(guides: GuideModules): DynamicModule {
    return {
      module: AppModule,
      imports: [guides.store, guides.outlet, guides.health],
      controllers: [ShopController],
      providers: [Ledger],
    };
  }
}
