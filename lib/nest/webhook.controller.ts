import {
  Controller,
  Get,
  HttpException,
  Inject,
  Post,
  Req,
  Res,
  UseGuards,
  type CanActivate,
  type Type,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { PaymentsClient } from '../core/client/index.js';
import { attachedAuthentication, setHeaders } from './webhook.guard.js';
import {
  webhookRequestOf,
  FASTIFY_ROUTE_CONFIG_METADATA,
  WEBHOOK_ROUTE_FLAG,
  type WebhookHttpRequest,
} from './webhook.request.js';

/**
 * What every generated webhook controller does: receives
 * the service's deliveries at `webhook.path` and `webhook.path/:token` (under the host's global
 * prefix), by GET or POST, with JSON, form, text or no body, and answers with what the core's
 * webhook processor decided: 200 handled or duplicate, 202 still pending, 401/400/413 refused,
 * 409 busy, 500 a handler failed (delivered again later), 503 unavailable.
 *
 * Not a route by itself: each registration gets its own subclass, whose path, guard and host
 * decorators are fixed when the registration is defined, so several registrations (and several
 * apps in one process) never share route metadata.
 */
export abstract class PaymentsWebhookController {
  /**
   * @param client the registration's client
   * @param adapterHost replies on Express and Fastify alike
   */
  constructor(
    protected readonly client: PaymentsClient,
    protected readonly adapterHost: HttpAdapterHost,
  ) {}

  /** Settles one delivery; the guard has normally authenticated it already. @internal */
  protected async receive(request: WebhookHttpRequest, response: unknown): Promise<void> {
    let auth = attachedAuthentication(request, this.client);
    if (!auth) {
      // No result of this registration's guard (overridden in a test, or re-routed by the host):
      // authenticate here, with the same rules.
      const result = await this.client.webhooks.authenticate(await webhookRequestOf(this.client, request));
      if (!result.ok) {
        setHeaders(this.adapterHost, response, result.answer);
        throw new HttpException(result.answer.body, result.answer.status);
      }
      auth = Object.assign(result, { client: this.client });
    }
    const answer = await auth.deliver();
    setHeaders(this.adapterHost, response, answer);
    this.adapterHost.httpAdapter.reply(response, answer.body, answer.status);
  }
}

/** What one registration's webhook controller is made of: all known when the registration is defined. */
export interface WebhookControllerSpec {
  /** Injection token of the registration's client. */
  clientToken: string | symbol;
  /** The registration's token guard. */
  guard: Type<CanActivate>;
  /** The registration's name (undefined: the default registration). */
  registration?: string;
  /** The controller's path; `''` when the registration's module path carries it (see payments.module.ts). */
  path: string;
  /** The host's `webhook.decorators`. */
  decorators: ReadonlyArray<ClassDecorator | MethodDecorator>;
}

/**
 * Builds the webhook controller class of one registration, complete: its path, the host's
 * decorators, then the registration's token guard (so host guards run first, as a global guard
 * would), injecting the client under `spec.clientToken`. Nothing is written on the class after
 * this: Nest scans it as it is (a guard or interceptor class added later would never be
 * instantiated, and a path written later would be shared by every app using the class).
 *
 * The token routes are `:token` on Express and Fastify alike: a token is at most 80 characters,
 * under Fastify's default `maxParamLength` (100).
 */
export function createWebhookController(spec: WebhookControllerSpec): Type<PaymentsWebhookController> {
  const { clientToken, guard, registration, path, decorators } = spec;
  class RegistrationWebhookController extends PaymentsWebhookController {
    constructor(@Inject(clientToken) client: PaymentsClient, @Inject(HttpAdapterHost) adapterHost: HttpAdapterHost) {
      super(client, adapterHost);
    }

    /** Delivery by POST, token in the query (legacy `?webhook_token=`) or none (`acceptUnsigned`). */
    @Post()
    post(@Req() request: WebhookHttpRequest, @Res() response: unknown): Promise<void> {
      return this.receive(request, response);
    }

    /** Delivery by GET, payment id in the query. */
    @Get()
    get(@Req() request: WebhookHttpRequest, @Res() response: unknown): Promise<void> {
      return this.receive(request, response);
    }

    /** Delivery by POST to the signed URL `<publicUrl>/<token>`. */
    @Post(':token')
    postWithToken(@Req() request: WebhookHttpRequest, @Res() response: unknown): Promise<void> {
      return this.receive(request, response);
    }

    /** Delivery by GET to the signed URL `<publicUrl>/<token>`. */
    @Get(':token')
    getWithToken(@Req() request: WebhookHttpRequest, @Res() response: unknown): Promise<void> {
      return this.receive(request, response);
    }
  }
  Object.defineProperty(RegistrationWebhookController, 'name', {
    value: registration === undefined ? 'PaymentsWebhookController' : `PaymentsWebhookController_${registration}`,
  });
  // Flags the routes for the Fastify catch-all body parser (acceptAnyBodyOnWebhookRoutes).
  for (const method of ['post', 'get', 'postWithToken', 'getWithToken'] as const) {
    // The method is a metadata target, never called unbound.
    // eslint-disable-next-line @typescript-eslint/unbound-method
    const target = RegistrationWebhookController.prototype[method];
    Reflect.defineMetadata(FASTIFY_ROUTE_CONFIG_METADATA, { [WEBHOOK_ROUTE_FLAG]: true }, target);
  }
  Controller(path)(RegistrationWebhookController);
  for (const decorator of decorators) {
    if (typeof decorator !== 'function')
      throw new TypeError('webhook.decorators must be decorators (functions), e.g. [UseGuards(MyGuard)]');
    (decorator as ClassDecorator)(RegistrationWebhookController);
  }
  UseGuards(guard)(RegistrationWebhookController);
  return RegistrationWebhookController;
}
