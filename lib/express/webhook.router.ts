import express, { type NextFunction, type Request, type Response, type Router } from 'express';
import {
  PaymentEvents,
  type AnyEventHandler,
  type PaymentAuthorizedEvent,
  type PaymentCancelledEvent,
  type PaymentCapturedEvent,
  type PaymentConfirmedEvent,
  type PaymentDuplicateEvent,
  type PaymentEventName,
  type PaymentExpiredEvent,
  type PaymentFailedEvent,
  type PaymentMismatchEvent,
  type PaymentRefundedEvent,
} from '../core/index.js';
import type { PaymentsClient } from '../core/client/index.js';
import type { WebhookAnswer } from '../core/webhook/index.js';

/** Options of {@link createWebhookRouter}. */
export interface WebhookRouterOptions {
  /** The client from `createPaymentsClient()`: its secret checks tokens, its store holds bindings and claims. */
  client: PaymentsClient;
  /**
   * Called once per payment the service verified as paid (`SUCCESS`), awaited before the webhook
   * answers. Throw to leave it undone: the next webhook, return or reconciliation runs it again.
   */
  onPaymentConfirmed: (event: PaymentConfirmedEvent) => unknown;
  /** Called once per payment verified as failed (`FAILURE`, `SYSTEM_FAILURE`). Default: none. */
  onPaymentFailed?: (event: PaymentFailedEvent) => unknown;
  /** Called once per payment whose session ended unpaid (`EXPIRED`). Default: none. */
  onPaymentExpired?: (event: PaymentExpiredEvent) => unknown;
  /** Called once per pre-authorization holding the amount (`PREAUTH_SUCCESS`). Default: none. */
  onPaymentAuthorized?: (event: PaymentAuthorizedEvent) => unknown;
  /** Called when the service's amount or tracking id differs from what was sent (never confirmed). Default: none (an error is logged). */
  onPaymentMismatch?: (event: PaymentMismatchEvent) => unknown;
  /**
   * Called once per payment that succeeded for an order another payment already settled (a
   * second charge: never `onPaymentConfirmed`); refund it, or set `duplicates: { refund: true }`.
   * Throw to have it run again. Default: none (a warning is logged).
   */
  onPaymentDuplicate?: (event: PaymentDuplicateEvent) => unknown;
  /**
   * Called after `client.capturePayment()` succeeds (the service captured the pre-authorization).
   * A throw is logged, never thrown to the capture's caller: the capture has happened. Default: none.
   */
  onPaymentCaptured?: (event: PaymentCapturedEvent) => unknown;
  /** Called after `client.refundPayment()` succeeds; a throw is logged, not thrown. Default: none. */
  onPaymentRefunded?: (event: PaymentRefundedEvent) => unknown;
  /** Called after `client.cancelPayment()` succeeds; a throw is logged, not thrown. Default: none. */
  onPaymentCancelled?: (event: PaymentCancelledEvent) => unknown;
}

/**
 * An Express router receiving the service's webhooks, with the same token check, body limits,
 * answers and delivery rules as the Nest controller (both use the core's `WebhookProcessor`).
 * Mount it at the path of your `webhook.publicUrl`:
 * `app.use('/payments/webhook', createWebhookRouter({ client, onPaymentConfirmed }))`.
 * It parses its own bodies (JSON, form, text or none), so it works with or without app-wide
 * body parsers. Creating it registers the handlers on the client, so `client.reconcilePayment()`
 * and reconciliation run them too.
 */
export function createWebhookRouter(options: WebhookRouterOptions): Router {
  const { client } = options;
  if (typeof options.onPaymentConfirmed !== 'function')
    throw new TypeError('createWebhookRouter: onPaymentConfirmed must be a function');
  const table: Partial<Record<PaymentEventName, AnyEventHandler>> = {
    [PaymentEvents.CONFIRMED]: options.onPaymentConfirmed,
    [PaymentEvents.FAILED]: options.onPaymentFailed,
    [PaymentEvents.EXPIRED]: options.onPaymentExpired,
    [PaymentEvents.AUTHORIZED]: options.onPaymentAuthorized,
    [PaymentEvents.MISMATCH]: options.onPaymentMismatch,
    [PaymentEvents.DUPLICATE]: options.onPaymentDuplicate,
    [PaymentEvents.CAPTURED]: options.onPaymentCaptured,
    [PaymentEvents.REFUNDED]: options.onPaymentRefunded,
    [PaymentEvents.CANCELLED]: options.onPaymentCancelled,
  };
  client.setHandlers({ handlersOf: (name: PaymentEventName) => (table[name] ? [table[name]] : []) });

  const limit = client.webhookMaxBodyBytes;
  const router = express.Router();
  // Not enumerable, under a symbol: how another webhook router of the app finds this one's client.
  Object.defineProperty(router, WEBHOOK_ROUTER_CLIENT, { value: client, enumerable: false });
  // JSON and form by their types; anything else (text/plain, no Content-Type) as text, which the
  // core parses as JSON or form: real services are not careful with Content-Type.
  router.use(
    express.json({ limit }),
    express.urlencoded({ extended: false, limit }),
    express.text({ limit, type: () => true }),
  );

  // The mount path is known from the first request only (Express tells a router nothing when it is
  // mounted): compared then with webhook.publicUrl, once per router. The app's other webhook
  // routers are found in its router stack then too, so that their clients' tokens are told apart
  // from forged ones (421, named) whatever their secrets.
  let mountChecked = false;
  const receive = async (req: Request, res: Response): Promise<void> => {
    if (!mountChecked) {
      mountChecked = true;
      client.webhooks.warnIfUnreachable(
        req.baseUrl,
        client.name === undefined ? 'this client' : `client '${client.name}'`,
      );
      const app: unknown = req.app;
      client.webhooks.setRegistrations({
        label: clientLabel(client),
        route: req.baseUrl,
        others: () =>
          webhookClientsIn(app)
            .filter((other) => other !== client)
            .map((other) => ({ label: clientLabel(other), minted: (token: string) => other.webhooks.minted(token) })),
      });
    }
    const token = typeof req.params.token === 'string' ? req.params.token : undefined;
    const answer = await client.webhooks.handle({
      query: req.query,
      body: req.body,
      contentLength: req.headers['content-length'],
      pathToken: token,
    });
    send(res, answer);
  };
  for (const path of ['/', '/:token']) {
    router.get(path, (req, res, next) => void receive(req, res).catch(next));
    router.post(path, (req, res, next) => void receive(req, res).catch(next));
  }

  // Body-parser failures (too large, broken JSON) answer like the Nest controller does, as JSON.
  router.use((error: { status?: number; type?: string }, _req: Request, res: Response, next: NextFunction) => {
    if (res.headersSent) return next(error);
    const status =
      error.type === 'entity.too.large'
        ? 413
        : typeof error.status === 'number' && error.status < 500
          ? error.status
          : 400;
    send(res, { status, body: { received: false, error: status === 413 ? 'payload too large' : 'malformed webhook' } });
  });
  return router;
}

/** Where a webhook router keeps its client (see {@link webhookClientsIn}). */
const WEBHOOK_ROUTER_CLIENT: unique symbol = Symbol.for('nestjs-payments.webhookRouterClient');

/** How a client is named in a warning: never by a secret. */
function clientLabel(client: PaymentsClient): string {
  return client.name === undefined ? 'the unnamed client' : `client '${client.name}'`;
}

interface StackHolder {
  stack?: Array<{ handle?: unknown }>;
  _router?: StackHolder;
  router?: StackHolder;
}

/**
 * The clients of the webhook routers mounted in an Express app, at any depth (routers and sub-apps
 * within it). Express 4 keeps an app's stack on `_router` (its `router` getter throws), Express 5
 * on `router`; a router keeps it on itself.
 */
function webhookClientsIn(app: unknown): PaymentsClient[] {
  const clients: PaymentsClient[] = [];
  const seen = new Set<unknown>();
  const stackOf = (holder: StackHolder): StackHolder['stack'] => {
    if (Array.isArray(holder.stack)) return holder.stack;
    try {
      return holder._router?.stack ?? holder.router?.stack;
    } catch {
      return undefined;
    }
  };
  const walk = (holder: unknown, depth: number): void => {
    if ((typeof holder !== 'function' && typeof holder !== 'object') || holder === null || seen.has(holder)) return;
    seen.add(holder);
    const client = (holder as { [WEBHOOK_ROUTER_CLIENT]?: PaymentsClient })[WEBHOOK_ROUTER_CLIENT];
    if (client !== undefined) {
      clients.push(client);
      return;
    }
    if (depth > 8) return;
    for (const layer of stackOf(holder) ?? []) walk(layer.handle, depth + 1);
  };
  walk(app, 0);
  return clients;
}

function send(res: Response, answer: WebhookAnswer): void {
  for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
  res.status(answer.status).json(answer.body);
}
