import { Injectable, Logger } from '@nestjs/common';
import { PaymentsError, PaymentsService, type PaymentOutcome } from 'nestjs-payments';
import { OrdersRepository } from './orders.repository.js';

/** What the start-up pass did. */
export interface StartupReconciliationReport {
  /** Pending orders with a payment that were checked. */
  checked: number;
  /** How many of each outcome the service gave (`pending` includes "busy elsewhere"). */
  outcomes: Partial<Record<PaymentOutcome | 'error', number>>;
}

const MAX_ORDERS = 500;

/**
 * At start-up, asks the payment service about every order still `pending` with a payment (the
 * shop may have stopped before a webhook arrived, or while a handler ran): `reconcilePayment`
 * verifies each and runs its outcome handlers, once, like any other path. Orders the service
 * still calls pending stay in the plugin's reconciliation queue (in the database: it survived
 * the restart too) and are checked again later.
 */
@Injectable()
export class StartupReconciliation {
  private readonly logger = new Logger('Orders');

  constructor(
    private readonly orders: OrdersRepository,
    private readonly payments: PaymentsService,
  ) {}

  /** Reconciles the pending orders one by one (a gentle pace for the service's verify budget). Never throws. */
  async run(): Promise<StartupReconciliationReport> {
    const report: StartupReconciliationReport = { checked: 0, outcomes: {} };
    let pending;
    try {
      pending = await this.orders.listPendingWithPayment(MAX_ORDERS);
    } catch (error) {
      this.logger.error(
        `start-up reconciliation: could not read the orders: ${error instanceof Error ? error.message : String(error)}`,
      );
      return report;
    }
    for (const order of pending) {
      let key: PaymentOutcome | 'error';
      try {
        const result = await this.payments.reconcilePayment(order.paymentId!, {
          source: 'reconciliation',
          expected: { amount: order.amount, developerTrackingId: order.id },
        });
        key = result.error !== undefined ? 'error' : result.outcome;
      } catch (error) {
        if (!(error instanceof PaymentsError))
          this.logger.error(`start-up reconciliation of order ${order.id}: ${String(error)}`);
        key = 'error';
      }
      report.checked++;
      report.outcomes[key] = (report.outcomes[key] ?? 0) + 1;
    }
    if (report.checked > 0) {
      const summary = Object.entries(report.outcomes)
        .map(([outcome, n]) => `${n} ${outcome}`)
        .join(', ');
      this.logger.log(`start-up reconciliation: ${report.checked} pending order(s) checked: ${summary}`);
    }
    return report;
  }
}
