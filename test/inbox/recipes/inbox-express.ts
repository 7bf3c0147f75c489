// file: inbox-express.ts
import type { Express } from 'express';
import {
  createPaymentsClient,
  createWebhookRouter,
  type PaymentConfirmedEvent,
  type PaymentsOptions,
} from 'nestjs-payments/express';
import type { PaymentsInbox } from 'nestjs-payments/store';

/**
 * Mounts the webhook router on `app` with a recipe's inbox (`pgInbox(pool)`) and handler
 * (`markPaidWithPg`); `options` are the client's other options. Call the client's `close()` on shutdown.
 */
export function mountInboxPayments(
  app: Express,
  inbox: PaymentsInbox,
  markPaid: (event: PaymentConfirmedEvent) => Promise<void>,
  options: PaymentsOptions,
) {
  const payments = createPaymentsClient({ ...options, inbox });
  app.use('/payments/webhook', createWebhookRouter({ client: payments, onPaymentConfirmed: markPaid }));
  return payments;
}
