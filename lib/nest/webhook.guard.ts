import {
  HttpException,
  Inject,
  Injectable,
  Optional,
  type CanActivate,
  type ExecutionContext,
  type Type,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { ServerResponse } from 'node:http';
import type { PaymentsClient } from '../core/client/index.js';
import type { WebhookAccepted, WebhookAnswer } from '../core/webhook/index.js';
import { PAYMENTS_CLIENT } from './payments.tokens.js';
import { webhookRequestOf, type WebhookHttpRequest } from './webhook.request.js';

/**
 * Where {@link PaymentsWebhookGuard} leaves its result on the request: a symbol-keyed property,
 * so it cannot clash with the host's request fields nor be set from HTTP. The webhook controller
 * uses it instead of authenticating again; a host route guarded by `PaymentsWebhookGuard` can read
 * it too (`request[PAYMENTS_WEBHOOK_AUTHENTICATION].paymentId`).
 */
export const PAYMENTS_WEBHOOK_AUTHENTICATION: unique symbol = Symbol.for('nestjs-payments.webhookAuthentication');

/** What {@link PaymentsWebhookGuard} attaches to an authenticated request. */
export interface PaymentsWebhookAuthentication extends WebhookAccepted {
  /** The client (registration) whose secret and store authenticated it. */
  readonly client: PaymentsClient;
}

/** The authentication a guard of `client` attached to a request, if any. */
export function attachedAuthentication(
  request: object,
  client: PaymentsClient,
): PaymentsWebhookAuthentication | undefined {
  const attached = (request as { [PAYMENTS_WEBHOOK_AUTHENTICATION]?: PaymentsWebhookAuthentication })[
    PAYMENTS_WEBHOOK_AUTHENTICATION
  ];
  return attached?.client === client ? attached : undefined;
}

/**
 * Lets a webhook through only with a valid signed token bound to the payment it names (or, with
 * `webhook.acceptUnsigned`, an unsigned delivery for a payment the plugin generated). It makes no
 * call to the service. A missing, forged or expired token answers 401, another registration's 421, a too-large body
 * 413, a malformed one 400 (as an `HttpException`, so host exception filters apply); nothing is
 * emitted for any of them. On success the result is put on the request under
 * {@link PAYMENTS_WEBHOOK_AUTHENTICATION}: its `deliver()` settles it
 * (the settlement runner then claims the payment, with the token's binding lookup, in one store
 * round trip; a binding of another payment answers 401 there). The guard holds nothing, so a
 * delivery a host interceptor answers first leaves nothing behind.
 *
 * The generated webhook controller uses it (its own subclass for a named registration). It can
 * also guard a host route. As exported it checks with the **default** registration's client
 * (`PAYMENTS_CLIENT`), so that token must be visible where the route is: register the default
 * registration with `isGlobal: true`, or put the route in the module that imports it. For a
 * **named** registration, subclass it with that registration's client (its provider must be
 * visible there in the same way):
 *
 * ```ts
 * @Injectable()
 * export class OutletWebhookGuard extends PaymentsWebhookGuard {
 *   constructor(@InjectPaymentsClient('outlet') client: PaymentsClient, adapterHost: HttpAdapterHost) {
 *     super(client, adapterHost);
 *   }
 * }
 * // @UseGuards(OutletWebhookGuard) on the host route; request[PAYMENTS_WEBHOOK_AUTHENTICATION] is then set
 * ```
 *
 * Works on the Express and Fastify adapters.
 */
@Injectable()
export class PaymentsWebhookGuard implements CanActivate {
  /**
   * @param client the registration's client (the default registration's unless subclassed)
   * @param adapterHost to set `Retry-After` on refusals; absent in application contexts
   */
  constructor(
    @Inject(PAYMENTS_CLIENT) protected readonly client: PaymentsClient,
    @Optional() @Inject(HttpAdapterHost) protected readonly adapterHost?: HttpAdapterHost,
  ) {}

  /** @inheritdoc */
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<WebhookHttpRequest>();
    const auth = await this.client.webhooks.authenticate(await webhookRequestOf(this.client, request));
    if (!auth.ok) {
      setHeaders(this.adapterHost, http.getResponse(), auth.answer);
      throw new HttpException(auth.answer.body, auth.answer.status);
    }
    // The same object, not a copy: the delivery carries its span and its deliver()/abandon().
    const attached: PaymentsWebhookAuthentication = Object.assign(auth, { client: this.client });
    endIfNotDelivered(http.getResponse(), attached);
    // Not enumerable: the client stays out of anything that serialises the request.
    Object.defineProperty(request, PAYMENTS_WEBHOOK_AUTHENTICATION, {
      value: attached,
      configurable: true,
      enumerable: false,
    });
    return true;
  }
}

/**
 * A host interceptor, pipe or filter can answer between this guard and the controller's
 * deliver(). When the response closes, the delivery is ended with the status that was sent (its
 * span, when tracing); a no-op once deliver() has run.
 */
function endIfNotDelivered(response: unknown, auth: PaymentsWebhookAuthentication): void {
  // Express hands the Node response itself, Fastify a reply wrapping it.
  const raw = ((response as { raw?: unknown } | undefined)?.raw ?? response) as Partial<ServerResponse> | undefined;
  if (typeof raw?.once !== 'function') return;
  raw.once('close', () => void auth.abandon(raw.statusCode ?? 0));
}

/** Copies an answer's extra headers (Retry-After) onto a response of whichever adapter. */
export function setHeaders(adapterHost: HttpAdapterHost | undefined, response: unknown, answer: WebhookAnswer): void {
  for (const [name, value] of Object.entries(answer.headers ?? {})) {
    adapterHost?.httpAdapter?.setHeader(response, name, value);
  }
}

/** A guard class bound to a named registration's client (the exported guard is the default one's). */
export function registrationGuard(clientToken: string | symbol, name: string): Type<PaymentsWebhookGuard> {
  @Injectable()
  class RegistrationWebhookGuard extends PaymentsWebhookGuard {
    constructor(@Inject(clientToken) client: PaymentsClient, @Inject(HttpAdapterHost) adapterHost: HttpAdapterHost) {
      super(client, adapterHost);
    }
  }
  Object.defineProperty(RegistrationWebhookGuard, 'name', { value: `PaymentsWebhookGuard_${name}` });
  return RegistrationWebhookGuard;
}
