import { Controller, Get, Inject, InternalServerErrorException, Post, Req, Res, UseGuards } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { EventEmitter2 } from '@nestjs/event-emitter';
import { PaymentEvents, type PaymentConfirmedEvent } from '../core/payment.events.js';
import type { PaymentsClient } from '../core/payments.client.js';
import { PAYMENTS_CLIENT } from './payments.module-definition.js';
import { authenticationOf, PaymentsWebhookGuard, setHeaders } from './webhook.guard.js';

/**
 * Receives the service's payment confirmations at `webhook.path` (default `payments/webhook`,
 * under the host's global prefix), by GET or POST, and emits `payment.confirmed` to the
 * `@OnPaymentConfirmed()` handlers, awaiting them before it answers.
 */
@Controller()
@UseGuards(PaymentsWebhookGuard)
export class PaymentsWebhookController {
  constructor(
    @Inject(PAYMENTS_CLIENT) private readonly client: PaymentsClient,
    private readonly events: EventEmitter2,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** Confirmation delivered by POST (JSON or form body). */
  @Post()
  receivePost(@Req() request: object, @Res() response: unknown): Promise<void> {
    return this.receive(request, response);
  }

  /** Confirmation delivered by GET (payment id in the query). */
  @Get()
  receiveGet(@Req() request: object, @Res() response: unknown): Promise<void> {
    return this.receive(request, response);
  }

  private async receive(request: object, response: unknown): Promise<void> {
    const auth = authenticationOf(request);
    // The guard always runs first; this only protects against a host re-routing the handler.
    if (!auth) throw new InternalServerErrorException();
    const answer = await this.client.webhooks.deliver(auth, (event) => this.dispatch(event));
    setHeaders(this.adapterHost, response, answer);
    this.adapterHost.httpAdapter.reply(response, answer.body, answer.status);
  }

  private async dispatch(event: PaymentConfirmedEvent): Promise<void> {
    // Marking a confirmation done with nobody listening would lose it; fail so it is redelivered.
    if (this.events.listenerCount(PaymentEvents.CONFIRMED) === 0) {
      throw new Error('no payment.confirmed handler is registered (use @OnPaymentConfirmed())');
    }
    await this.events.emitAsync(PaymentEvents.CONFIRMED, event);
  }
}
