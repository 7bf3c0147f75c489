// The Nest webhook endpoint, whole: the request as the core reads it (its body, and Fastify's
// content types), the token guard that authenticates a delivery before any host code runs, and the
// generated controller of each registration that delivers it. One concept (a delivery through
// Nest), in the order a request meets them.
import {
  Controller,
  Get,
  HttpException,
  Inject,
  Injectable,
  Optional,
  Post,
  Req,
  Res,
  UseGuards,
  type CanActivate,
  type ExecutionContext,
  type Type,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PaymentsClient } from '../core/client/index.js';
import type { WebhookAccepted, WebhookAnswer, WebhookRequest } from '../core/webhook/index.js';
import { PAYMENTS_CLIENT } from './payments.tokens.js';

/**
 * Fastify route config flag set on the generated webhook routes (through Nest's
 * `@RouteConfig` metadata key): the catch-all body parser below parses only for them.
 */
export const WEBHOOK_ROUTE_FLAG = 'nestjsPaymentsWebhook';

/** `FASTIFY_ROUTE_CONFIG_METADATA` of @nestjs/platform-fastify, spelled out: the plugin must not import that optional package. */
export const FASTIFY_ROUTE_CONFIG_METADATA = '__fastify_route_config__';

/** The parts of an Express or Fastify request a webhook reads. */
export interface WebhookHttpRequest {
  query?: unknown;
  body?: unknown;
  params?: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * The body of a webhook request. Nest-Express parses only JSON and form bodies; a `text/plain` or
 * untyped body is left unread in the request stream, so it is read here (at most `limit` + 1
 * bytes: the core answers 413 beyond `limit`) and kept on `request.body` for whoever reads it
 * next. Nest-Fastify bodies were parsed by Fastify (see {@link acceptAnyBodyOnWebhookRoutes}).
 */
export async function webhookBody(request: WebhookHttpRequest, limit: number): Promise<unknown> {
  if (!bodyUnread(request)) return request.body;
  const stream = request as unknown as IncomingMessage;
  const text = await new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
      if (size > limit) {
        // Enough to know it is too large: stop keeping it, let the rest drain, answer now.
        stream.off('data', onData);
        stream.resume();
        resolve(Buffer.concat(chunks));
      }
    };
    stream.on('data', onData);
    stream.once('end', () => resolve(Buffer.concat(chunks)));
    stream.once('error', reject);
  });
  request.body = text.length === 0 ? request.body : text.toString('utf8');
  return request.body;
}

/**
 * What the core's webhook processor reads of a request (its body read at most to the client's
 * limit): the guard and the controller hand it to `client.webhooks.authenticate()` (token, size,
 * body, payment id; no call to the service, and for a signed delivery no store access either).
 * @param maxBodyBytes the client's `webhookMaxBodyBytes`, read once when the guard or controller is built
 */
export function webhookRequestOf(
  maxBodyBytes: number,
  request: WebhookHttpRequest,
): WebhookRequest | Promise<WebhookRequest> {
  // A body the host's parser read (JSON, forms: nearly every delivery) is there already: no promise for it.
  return bodyUnread(request)
    ? webhookBody(request, maxBodyBytes).then((body) => requestWithBody(request, body))
    : requestWithBody(request, request.body);
}

/** Whether the request's body is still in its stream (no parser of the host read it). */
function bodyUnread(request: WebhookHttpRequest): boolean {
  const stream = request as unknown as IncomingMessage & { _body?: boolean };
  return typeof stream.pipe === 'function' && stream.readable && !stream.readableEnded && !stream._body;
}

function requestWithBody(request: WebhookHttpRequest, body: unknown): WebhookRequest {
  const token = request.params?.token;
  return {
    query: request.query,
    body,
    contentLength: request.headers['content-length'],
    pathToken: typeof token === 'string' && token !== '' ? token : undefined,
  };
}

interface FastifyLike {
  hasContentTypeParser(type: string): boolean;
  addContentTypeParser(
    type: string,
    options: { parseAs: 'string' },
    parser: (
      request: { routeOptions?: { config?: Record<string, unknown> }; headers: Record<string, unknown> },
      body: string,
      done: (error: Error | null, body?: unknown) => void,
    ) => void,
  ): void;
}

/**
 * On Nest-Fastify, lets `text/plain`-like, unknown and missing content types reach the webhook
 * route: Fastify answers 415 to a content type it has no parser for, and the service is not
 * careful with Content-Type. Fastify parsers are per server, not per route, so a catch-all (`*`)
 * parser is added that parses only for the webhook routes (flagged in their route config) and,
 * for every other route, fails with the same 415 Fastify would have given: the host's other
 * routes keep their behaviour. Nothing is added when the host already has a catch-all parser
 * (its parser then feeds the webhook too: a string or Buffer body is fine). No-op on Express.
 */
export function acceptAnyBodyOnWebhookRoutes(
  adapterHost: HttpAdapterHost | undefined,
  warn: (message: string) => void,
): void {
  const adapter = adapterHost?.httpAdapter;
  if (!adapter || adapter.getType?.() !== 'fastify') return;
  const fastify = adapter.getInstance<FastifyLike>();
  if (typeof fastify?.addContentTypeParser !== 'function' || typeof fastify.hasContentTypeParser !== 'function') return;
  try {
    if (fastify.hasContentTypeParser('*')) return;
    fastify.addContentTypeParser('*', { parseAs: 'string' }, (request, body, done) => {
      if (request.routeOptions?.config?.[WEBHOOK_ROUTE_FLAG] === true) return done(null, body);
      // Shaped like Fastify's own error (and like an http-errors one), so Nest answers 415 as before.
      const type = String(request.headers['content-type'] ?? '');
      const error = Object.assign(new Error(`Unsupported Media Type: ${type}`), {
        statusCode: 415,
        status: 415,
        expose: true,
        code: 'FST_ERR_CTP_INVALID_MEDIA_TYPE',
      });
      error.name = 'FastifyError';
      done(error);
    });
  } catch (error) {
    // Too late (the server is listening): webhooks with unusual content types get Fastify's 415.
    warn(
      `could not add a body parser for the webhook route: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

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
  // Read once: a delivery then goes from the guard to the webhook processor without entering the client.
  readonly #maxBodyBytes: number;

  /**
   * @param client the registration's client (the default registration's unless subclassed)
   * @param adapterHost to set `Retry-After` on refusals; absent in application contexts
   */
  constructor(
    @Inject(PAYMENTS_CLIENT) protected readonly client: PaymentsClient,
    @Optional() @Inject(HttpAdapterHost) protected readonly adapterHost?: HttpAdapterHost,
  ) {
    this.#maxBodyBytes = client.webhookMaxBodyBytes;
  }

  /** @inheritdoc */
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<WebhookHttpRequest>();
    const read = webhookRequestOf(this.#maxBodyBytes, request);
    const auth = await this.client.webhooks.authenticate(read instanceof Promise ? await read : read);
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
  if (typeof raw?.on !== 'function') return;
  // `on`, not `once`: a response closes once, and its listeners go with it (no wrapper to bind and remove).
  raw.on('close', () => void auth.abandon(raw.statusCode ?? 0));
}

/** Copies an answer's extra headers (Retry-After) onto a response of whichever adapter. */
export function setHeaders(adapterHost: HttpAdapterHost | undefined, response: unknown, answer: WebhookAnswer): void {
  const headers = answer.headers;
  // Most answers (every 200) carry none: no object and no entries list for them.
  if (headers === undefined) return;
  for (const [name, value] of Object.entries(headers)) {
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
  // Read once, as the guard does.
  readonly #maxBodyBytes: number;

  /**
   * @param client the registration's client
   * @param adapterHost replies on Express and Fastify alike
   */
  constructor(
    protected readonly client: PaymentsClient,
    protected readonly adapterHost: HttpAdapterHost,
  ) {
    this.#maxBodyBytes = client.webhookMaxBodyBytes;
  }

  /** Settles one delivery; the guard has normally authenticated it already. @internal */
  protected async receive(request: WebhookHttpRequest, response: unknown): Promise<void> {
    let auth = attachedAuthentication(request, this.client);
    if (!auth) {
      // No result of this registration's guard (overridden in a test, or re-routed by the host):
      // authenticate here, with the same rules.
      const read = webhookRequestOf(this.#maxBodyBytes, request);
      const result = await this.client.webhooks.authenticate(read instanceof Promise ? await read : read);
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
