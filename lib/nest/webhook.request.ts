import type { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage } from 'node:http';
import type { PaymentsClient } from '../core/client/index.js';
import type { WebhookRequest } from '../core/webhook/index.js';

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
  const stream = request as unknown as IncomingMessage & { _body?: boolean };
  const unread = typeof stream.pipe === 'function' && stream.readable && !stream.readableEnded && !stream._body;
  if (!unread) return request.body;
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
 */
export async function webhookRequestOf(client: PaymentsClient, request: WebhookHttpRequest): Promise<WebhookRequest> {
  const body = await webhookBody(request, client.webhookMaxBodyBytes);
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
