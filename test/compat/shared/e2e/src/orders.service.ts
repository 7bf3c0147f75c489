// The merchant's side of the e2e compatibility apps (test/compat/apps/*, those with a test/):
// run.sh copies this file into each one's src/. Public API only (the package's entry points): the scenario must
// keep working whatever the plugin does between the service's confirmation and the handler.
import { Injectable } from '@nestjs/common';
import { OnPaymentConfirmed, type PaymentConfirmedEvent } from 'nestjs-payments';

/** Records every confirmed payment, as a shop would mark its order paid. */
@Injectable()
export class Orders {
  readonly paid: PaymentConfirmedEvent[] = [];

  @OnPaymentConfirmed()
  markPaid(event: PaymentConfirmedEvent): void {
    this.paid.push(event);
  }
}
