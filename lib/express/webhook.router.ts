import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import type { PaymentConfirmedEvent } from '../core/payment.events.js';
import type { PaymentsClient } from '../core/payments.client.js';
import type { WebhookAnswer } from '../core/webhook.processor.js';

/** Options of {@link createWebhookRouter}. */
export interface WebhookRouterOptions {
  /** The client from `createPaymentsClient()`: its secret checks tokens, its store holds bindings and claims. */
  client: PaymentsClient;
  /**
   * Called once per confirmed payment, awaited before the webhook answers. Throw to answer 500
   * and have the confirmation delivered again later (nothing is marked done).
   */
  onPaymentConfirmed: (event: PaymentConfirmedEvent) => unknown | Promise<unknown>;
}

/**
 * An Express router receiving the service's confirmations, with the same token check, body
 * limits, answers and delivery rules as the Nest controller (both use the core's
 * `WebhookProcessor`). Mount it at the path of your `webhook.publicUrl`:
 * `app.use('/payments/webhook', createWebhookRouter({ client, onPaymentConfirmed }))`.
 * It parses its own bodies, so it works with or without app-wide body parsers.
 */
export function createWebhookRouter(options: WebhookRouterOptions): Router {
  const { client, onPaymentConfirmed } = options;
  if (typeof onPaymentConfirmed !== 'function') throw new TypeError('createWebhookRouter: onPaymentConfirmed must be a function');
  const limit = client.webhookMaxBodyBytes;
  const router = express.Router();
  router.use(express.json({ limit }), express.urlencoded({ extended: false, limit }));

  const receive = async (req: Request, res: Response): Promise<void> => {
    const answer = await client.webhooks.handle(
      { query: req.query, body: req.body, contentLength: req.headers['content-length'] },
      async (event) => {
        await onPaymentConfirmed(event);
      },
    );
    send(res, answer);
  };
  router.get('/', (req, res, next) => void receive(req, res).catch(next));
  router.post('/', (req, res, next) => void receive(req, res).catch(next));

  // Body-parser failures (too large, broken JSON) answer like the Nest controller does, as JSON.
  router.use((error: { status?: number; type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    const status = error.type === 'entity.too.large' ? 413 : typeof error.status === 'number' && error.status < 500 ? error.status : 400;
    send(res, { status, body: { received: false, error: status === 413 ? 'payload too large' : 'malformed webhook' } });
  });
  return router;
}

function send(res: Response, answer: WebhookAnswer): void {
  for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
  res.status(answer.status).json(answer.body);
}
