import { Controller, Get, HttpException, Inject, Post, Req, Res, UseGuards, type CanActivate, type Type } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { PaymentsClient } from '../core/payments.client.js';
import type { PaymentsModuleOptions } from './payments.module-options.js';
import { attachedAuthentication, setHeaders } from './webhook.guard.js';
import { authenticateWebhook, FASTIFY_ROUTE_CONFIG_METADATA, WEBHOOK_ROUTE_FLAG, type WebhookHttpRequest } from './webhook.request.js';

// Nest's PATH_METADATA key; spelled out because its import path differs between Nest 11 and 12.
const PATH_METADATA = 'path';
const CONFIGURED = Symbol('nestjs-payments.controllerConfigured');

/**
 * What every generated webhook controller does: receives
 * the service's deliveries at `webhook.path` and `webhook.path/:token` (under the host's global
 * prefix), by GET or POST, with JSON, form, text or no body, and answers with what the core's
 * webhook processor decided: 200 handled or duplicate, 202 still pending, 401/400/413 refused,
 * 409 busy, 500 a handler failed (delivered again later), 503 unavailable.
 *
 * Not a route by itself: each registration gets its own subclass with its own path, so several
 * registrations (and several apps in one process) never share route metadata.
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
      const result = await authenticateWebhook(this.client, request);
      if (!result.ok) {
        setHeaders(this.adapterHost, response, result.answer);
        throw new HttpException(result.answer.body, result.answer.status);
      }
      auth = { ...result, client: this.client };
    }
    const answer = await this.client.webhooks.deliver(auth);
    setHeaders(this.adapterHost, response, answer);
    this.adapterHost.httpAdapter.reply(response, answer.body, answer.status);
  }
}

/**
 * Builds the webhook controller class of one registration: its own class (so its path and
 * decorators are its own), guarded by `guard`, injecting the client under `clientToken`. Its
 * path is set by {@link configureWebhookController} once the (possibly async) options are known,
 * which Nest does before it registers routes.
 */
export function createWebhookController(clientToken: string | symbol, guard: Type<CanActivate>, registration?: string): Type<PaymentsWebhookController> {
  @Controller()
  @UseGuards(guard)
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
    // eslint-disable-next-line @typescript-eslint/unbound-method -- the method is a metadata target, never called unbound
    Reflect.defineMetadata(FASTIFY_ROUTE_CONFIG_METADATA, { [WEBHOOK_ROUTE_FLAG]: true }, RegistrationWebhookController.prototype[method]);
  }
  return RegistrationWebhookController;
}

/**
 * Adapts the token routes to the HTTP platform, once it is known (Nest calls module `configure()`
 * after the adapter is attached and before it registers routes). Fastify refuses a route
 * parameter longer than its `maxParamLength` (100 by default) with 414, and a token with a
 * tracking id is longer: there the token routes are Fastify's wildcard (`<path>/*`), which has no
 * such limit. Express keeps `<path>/:token` (Express 5 has no named bare wildcard).
 */
export function adaptWebhookRoutes(controller: Type<PaymentsWebhookController>, platform: string | undefined): void {
  const tokenPath = platform === 'fastify' ? '*' : ':token';
  for (const method of ['postWithToken', 'getWithToken']) {
    Reflect.defineMetadata(PATH_METADATA, tokenPath, (controller.prototype as Record<string, object>)[method]);
  }
}

/**
 * Gives a registration's controller its path (`webhook.path`) and the host's decorators
 * (`webhook.decorators`). Runs when the client is built: after async options resolve, before
 * Nest registers routes. Decorators are applied once per class, even when one module definition
 * is compiled by several apps.
 */
export function configureWebhookController(controller: Type<PaymentsWebhookController>, client: PaymentsClient, options: PaymentsModuleOptions): void {
  Reflect.defineMetadata(PATH_METADATA, client.webhookPath, controller);
  const target = controller as Type<PaymentsWebhookController> & { [CONFIGURED]?: boolean };
  if (target[CONFIGURED]) return;
  target[CONFIGURED] = true;
  for (const decorator of options.webhook?.decorators ?? []) {
    if (typeof decorator !== 'function') throw new TypeError('webhook.decorators must be decorators (functions)');
    (decorator as ClassDecorator)(controller);
  }
}
