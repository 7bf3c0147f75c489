import { HttpException, Inject, Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { PaymentsClient } from '../core/payments.client.js';
import type { WebhookAnswer, WebhookAuthentication } from '../core/webhook.processor.js';
import { PAYMENTS_CLIENT } from './payments.module-definition.js';

type Authenticated = Extract<WebhookAuthentication, { ok: true }>;

// Keyed by the request object itself: nothing is added to the host's request, and entries go with it.
const authenticated = new WeakMap<object, Authenticated>();

/** The authentication a guard attached to a request, for the controller. */
export function authenticationOf(request: object): Authenticated | undefined {
  return authenticated.get(request);
}

/**
 * Lets a webhook through only with a valid signed token bound to the payment it names.
 * A missing, forged, expired or foreign token answers 401, a too-large body 413, a malformed
 * one 400; nothing is emitted for any of them. Works on the Express and Fastify adapters.
 */
@Injectable()
export class PaymentsWebhookGuard implements CanActivate {
  constructor(
    @Inject(PAYMENTS_CLIENT) private readonly client: PaymentsClient,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** @inheritdoc */
  async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const request = http.getRequest<{ query?: unknown; body?: unknown; headers: Record<string, string | string[] | undefined> }>();
    const auth = await this.client.webhooks.authenticate({
      query: request.query,
      body: request.body,
      contentLength: request.headers['content-length'],
    });
    if (!auth.ok) {
      setHeaders(this.adapterHost, http.getResponse(), auth.answer);
      throw new HttpException(auth.answer.body, auth.answer.status);
    }
    authenticated.set(request, auth);
    return true;
  }
}

/** Copies an answer's extra headers (Retry-After) onto a response of whichever adapter. */
export function setHeaders(adapterHost: HttpAdapterHost, response: unknown, answer: WebhookAnswer): void {
  for (const [name, value] of Object.entries(answer.headers ?? {})) {
    adapterHost.httpAdapter.setHeader(response, name, value);
  }
}
