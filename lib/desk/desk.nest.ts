import { Controller, Get, Inject, Logger, Post, Req, Res, UseGuards, type DynamicModule } from '@nestjs/common';
import { HttpAdapterHost, ModuleRef } from '@nestjs/core';
import type { PaymentsClient } from '../core/client/index.js';
import { getPaymentsClientToken } from '../nest/payments.tokens.js';
import { FASTIFY_ROUTE_CONFIG_METADATA, WEBHOOK_ROUTE_FLAG } from '../nest/webhook.controller.js';
import { PaymentsDeskEngine, type DeskRequest } from './desk.handler.js';
import type { PaymentsDeskModuleOptions } from './desk.module.js';
import type { DeskAuthorization } from './desk.options.js';

/** What the desk reads of a Nest request (Express's or Fastify's). */
interface NestDeskRequest {
  method?: string;
  originalUrl?: string;
  url?: string;
  body?: unknown;
  headers: Record<string, string | string[] | undefined>;
  user?: unknown;
}

/** The principal a guard left on the request: `request.user` as a string, or its id, sub, username or email. */
function userOf(request: NestDeskRequest): DeskAuthorization {
  const user = request.user;
  if (typeof user === 'string') return user;
  if (typeof user !== 'object' || user === null) return false;
  const u = user as Record<string, unknown>;
  for (const key of ['id', 'sub', 'username', 'email']) {
    const value = u[key];
    if (typeof value === 'string' || typeof value === 'number') {
      const name = u.name ?? u.username ?? u.email;
      return { id: String(value), name: typeof name === 'string' ? name : String(value) };
    }
  }
  return false;
}

/**
 * A POST's form: parsed by the host (Nest-Express's form parser, `@fastify/formbody`), or the raw
 * text the payments module's catch-all Fastify parser hands to flagged routes.
 */
function formOf(body: unknown): Record<string, unknown> | undefined {
  if (typeof body === 'string' || Buffer.isBuffer(body))
    return Object.fromEntries(new URLSearchParams(body.toString('utf8')));
  return typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : undefined;
}

/**
 * The desk's Nest module for one `forRoot`: a controller of its own under `options.path`, guarded
 * by the host's guard, over the registration's client (found when the first request comes, so the
 * payments module need not be global).
 */
export function deskModule<R>(options: PaymentsDeskModuleOptions<R>): DynamicModule {
  const { path, guard, principal, registration, ...rest } = options;
  const clientToken = getPaymentsClientToken(registration);
  const logger = new Logger(registration === undefined ? 'PaymentsDesk' : `PaymentsDesk:${registration}`);
  const principalOf = (principal as ((request: NestDeskRequest) => DeskAuthorization) | undefined) ?? userOf;

  class PaymentsDeskController {
    #engine: PaymentsDeskEngine | undefined;

    constructor(
      @Inject(ModuleRef) private readonly moduleRef: ModuleRef,
      @Inject(HttpAdapterHost) private readonly adapterHost: HttpAdapterHost,
    ) {}

    /** The overview. */
    @Get()
    overview(@Req() request: NestDeskRequest, @Res() response: unknown): Promise<void> {
      return this.#serve(request, response, 0);
    }

    /** Search by payment or order id. */
    @Get('search')
    search(@Req() request: NestDeskRequest, @Res() response: unknown): Promise<void> {
      return this.#serve(request, response, 1);
    }

    /** The charts of a window. */
    @Get('charts')
    charts(@Req() request: NestDeskRequest, @Res() response: unknown): Promise<void> {
      return this.#serve(request, response, 1);
    }

    /** One payment. */
    @Get('payments/:paymentId')
    payment(@Req() request: NestDeskRequest, @Res() response: unknown): Promise<void> {
      return this.#serve(request, response, 2);
    }

    /** An action on one payment. */
    @Post('payments/:paymentId/:action')
    act(@Req() request: NestDeskRequest, @Res() response: unknown): Promise<void> {
      return this.#serve(request, response, 3);
    }

    async #serve(request: NestDeskRequest, response: unknown, depth: number): Promise<void> {
      this.#engine ??= new PaymentsDeskEngine(
        this.moduleRef.get<PaymentsClient>(clientToken, { strict: false }),
        rest,
        logger,
      );
      const url = new URL(request.originalUrl ?? request.url ?? '/', 'http://desk.invalid');
      const segments = url.pathname.split('/').filter((s) => s !== '');
      const own = segments.slice(segments.length - depth);
      const base =
        depth === 0 ? url.pathname.replace(/\/+$/, '') : `/${segments.slice(0, segments.length - depth).join('/')}`;
      const desk: DeskRequest = {
        method: request.method ?? 'GET',
        path: `/${own.join('/')}`,
        query: url.searchParams,
        form: formOf(request.body),
        header: (name) => {
          const value = request.headers[name];
          return Array.isArray(value) ? value[0] : value;
        },
        base: base === '/' ? '' : base,
      };
      const answer = await this.#engine.handle(desk, principalOf(request));
      const http = this.adapterHost.httpAdapter;
      for (const [name, value] of Object.entries(answer.headers)) http.setHeader(response, name, value);
      http.reply(response, answer.body, answer.status);
    }
  }
  // On Fastify, which parses no form by itself, the payments module's catch-all parser hands the
  // flagged routes their raw body (nest/webhook.controller.ts): the actions' forms reach the desk that way,
  // and the host's other routes keep their 415.
  // eslint-disable-next-line @typescript-eslint/unbound-method -- a metadata target, never called unbound
  const act = PaymentsDeskController.prototype.act;
  Reflect.defineMetadata(FASTIFY_ROUTE_CONFIG_METADATA, { [WEBHOOK_ROUTE_FLAG]: true }, act);
  Object.defineProperty(PaymentsDeskController, 'name', {
    value: registration === undefined ? 'PaymentsDeskController' : `PaymentsDeskController_${registration}`,
  });
  Controller(path.replace(/^\/+|\/+$/g, ''))(PaymentsDeskController);
  UseGuards(guard as unknown as new (...args: unknown[]) => object)(PaymentsDeskController);

  class PaymentsDeskHostModule {}
  Object.defineProperty(PaymentsDeskHostModule, 'name', {
    value: registration === undefined ? 'PaymentsDeskModule' : `PaymentsDeskModule_${registration}`,
  });
  return { module: PaymentsDeskHostModule, controllers: [PaymentsDeskController] };
}
