import {
  EventBus,
  Logger,
  OrderService,
  RequestContext,
  TransactionalConnection,
  type Order,
  type PaymentMethod,
} from '@vendure/core';
import {
  PaymentEvents,
  type PaymentDuplicateEvent,
  type PaymentEvent,
  type PaymentEventName,
  type PaymentOutcomeEvent,
} from '../core/settlement/index.js';
import { cardDetailsOf } from '../core/api/index.js';
import { decideSettlement, orderCodeOf, type UnexpectedPaymentReason, type VerifiedState } from './vendure.decision.js';
import { NestjsPaymentsUnexpectedPaymentEvent } from './vendure.events.js';
import { amountOwed, millimesToVendure } from './vendure.money.js';
import type { VerifiedPaymentMetadata } from './vendure.types.js';

/**
 * The inbox's transaction the engine hands a settlement (`event.transaction.client`: the
 * `RequestContext` of Vendure's `withTransaction`), or undefined without the inbox.
 */
function transactionOf(event: PaymentEvent): RequestContext | undefined {
  const client = (event as Partial<PaymentOutcomeEvent>).transaction?.client;
  return client instanceof RequestContext ? client : undefined;
}

/** The context the plugin's log lines carry. */
export const LOG_CONTEXT = 'NestjsPaymentsPlugin';

/** Whether Vendure answered with the order (not an error result). */
export function isOrder(value: unknown): value is Order {
  return typeof value === 'object' && value !== null && 'code' in value && 'state' in value && !('errorCode' in value);
}

/** What the settlement uses of Vendure and of the plugin's service. */
export interface VendureSettlementDeps {
  /** Vendure's orders. */
  readonly orderService: OrderService;
  /**
   * A context as Vendure's own payment plugins build one (`RequestContextService.create`): admin
   * API, the channel of this token (default: the default channel), and the request that led to
   * the settlement (the webhook's, or the storefront's return) when there is one, so that
   * Vendure's subscribers (emails, search index) see what they see for a storefront payment.
   */
  readonly requestContext: (channelToken?: string) => Promise<RequestContext>;
  /** Vendure's database connection (one transaction per settlement). */
  readonly connection: TransactionalConnection;
  /** Vendure's event bus (unexpected payments are published on it). */
  readonly eventBus: EventBus;
  /** The PaymentMethod for a verified payment (the service's lookup). */
  readonly paymentMethod: (
    ctx: RequestContext,
    code: string | undefined,
    verified?: VerifiedState,
  ) => Promise<PaymentMethod>;
  /** Vendure's money precision. */
  readonly precision: () => number;
}

/**
 * The engine's outcome dispatcher for Vendure: adds each verified payment to its order once, or
 * reports why not (the engine runs it once per payment, across paths, processes and instances).
 */
export class VendureSettlement {
  /** @param deps what it uses of Vendure and of the plugin's service */
  constructor(private readonly deps: VendureSettlementDeps) {}

  /**
   * The engine's dispatcher: every event kind, mapped exhaustively.
   * @param methodCode the payment method whose own account verified the payment; undefined: the plugin's account
   */
  async dispatch(name: PaymentEventName, event: PaymentEvent, methodCode?: string): Promise<void> {
    switch (name) {
      case PaymentEvents.CONFIRMED:
        return this.settle(event as PaymentOutcomeEvent, 'Settled', methodCode);
      case PaymentEvents.AUTHORIZED:
        return this.settle(event as PaymentOutcomeEvent, 'Authorized', methodCode);
      case PaymentEvents.MISMATCH: {
        const outcome = event as PaymentOutcomeEvent;
        return this.report(
          transactionOf(outcome) ?? (await this.adminContext()),
          'amount-mismatch',
          orderCodeOf(outcome.developerTrackingId),
          outcome,
          undefined,
        );
      }
      case PaymentEvents.FAILED:
      case PaymentEvents.EXPIRED: {
        const outcome = event as PaymentOutcomeEvent;
        // The order stays as it was: the customer may ask for a new link.
        Logger.info(
          `payment ${outcome.paymentId} of order ${outcome.developerTrackingId ?? '?'}: ${outcome.status}`,
          LOG_CONTEXT,
        );
        return;
      }
      case PaymentEvents.DUPLICATE:
        // A second charge of an order another payment already settled: the order stays as it is;
        // reported as any payment the order does not take (refund it, or set `duplicates: { refund: true }`).
        return this.reportDuplicate(event as PaymentDuplicateEvent);
      case PaymentEvents.CAPTURED:
      case PaymentEvents.REFUNDED:
      case PaymentEvents.CANCELLED:
        // Vendure records these itself (the handler's settlePayment, createRefund, cancelPayment).
        return;
      default: {
        const unknown: never = name;
        throw new Error(`nestjs-payments: unhandled event ${String(unknown)}`);
      }
    }
  }

  private adminContext(channelToken?: string): Promise<RequestContext> {
    return this.deps.requestContext(channelToken);
  }

  /**
   * The order of a tracking id, and a context of its own channel (where its payment method lives).
   * @param tx the inbox's transaction, when the settlement runs in one: the lookup runs in it, and
   *   the channel's context keeps it
   */
  private async orderContext(
    code: string | undefined,
    tx: RequestContext | undefined,
  ): Promise<{ lookup: RequestContext; found?: Order; ctx?: RequestContext }> {
    const lookup = tx ?? (await this.adminContext());
    const found = code ? await this.deps.orderService.findOneByCode(lookup, code, ['channels']) : undefined;
    if (!found) return { lookup };
    const channel = found.channels?.find((c) => c.code !== '__default_channel__') ?? found.channels?.[0];
    const ctx = await this.adminContext(channel?.token);
    return { lookup, found, ctx: tx ? tx.copy(ctx.channel) : ctx };
  }

  private async reportDuplicate(event: PaymentDuplicateEvent): Promise<void> {
    const code = orderCodeOf(event.developerTrackingId);
    const { lookup, found, ctx } = await this.orderContext(code, transactionOf(event));
    const refunded = event.refund
      ? `refunded (${event.refund.refundId}) by duplicates.refund`
      : `nothing was refunded${event.refundError ? ` (the refund was refused: ${event.refundError})` : ''}`;
    return this.report(ctx ?? lookup, 'order-already-paid', code, event, found?.state, refunded);
  }

  /**
   * Adds a verified payment to its order once, or reports it; throws (to be retried) only when
   * Vendure failed. In the inbox's transaction when the engine hands one (the Payment, the order's
   * transition and the inbox row commit together: exactly once); else in a transaction of its own.
   */
  private async settle(event: PaymentOutcomeEvent, verified: VerifiedState, methodCode?: string): Promise<void> {
    const code = orderCodeOf(event.developerTrackingId);
    const inbox = transactionOf(event);
    const { lookup, found, ctx } = await this.orderContext(code, inbox);
    if (!found || !code || !ctx) return this.report(lookup, 'order-not-found', code, event, undefined);
    const settleIn = (tx: RequestContext) => this.settleIn(tx, code, event, verified, methodCode);
    if (inbox) return settleIn(ctx);
    await this.deps.connection.withTransaction(ctx, settleIn);
  }

  private async settleIn(
    tx: RequestContext,
    code: string,
    event: PaymentOutcomeEvent,
    verified: VerifiedState,
    methodCode: string | undefined,
  ): Promise<void> {
    const order = await this.deps.orderService.findOneByCode(tx, code, ['payments']);
    const action = decideSettlement({
      verified,
      orderState: order?.state,
      placed: Boolean(order?.orderPlacedAt),
      recorded: Boolean(
        order?.payments?.some(
          (p) => p.transactionId === event.paymentId && p.state !== 'Error' && p.state !== 'Declined',
        ),
      ),
    });
    switch (action.kind) {
      case 'nothing':
        return;
      case 'report':
        return this.report(tx, action.reason, code, event, order?.state);
      case 'add':
        if (!order) return;
        return this.add(tx, order, event, action.state, methodCode);
      default: {
        const unknown: never = action;
        throw new Error(`nestjs-payments: unhandled action ${JSON.stringify(unknown)}`);
      }
    }
  }

  private async add(
    ctx: RequestContext,
    order: Order,
    event: PaymentOutcomeEvent,
    state: VerifiedState,
    methodCode: string | undefined,
  ): Promise<void> {
    let amount: number;
    try {
      amount = millimesToVendure(event.amount, this.deps.precision());
    } catch {
      return this.report(ctx, 'amount-mismatch', order.code, event, order.state);
    }
    if (order.state !== 'ArrangingPayment' && order.state !== 'ArrangingAdditionalPayment') {
      const moved = await this.deps.orderService.transitionToState(ctx, order.id, 'ArrangingPayment');
      // The customer has paid but the order cannot take it (stock, eligibility...): reported, kept.
      if (!isOrder(moved)) return this.report(ctx, 'order-not-payable', order.code, event, order.state);
    }
    const method = await this.deps.paymentMethod(ctx, methodCode, state);
    const metadata: VerifiedPaymentMetadata = {
      nestjsPayments: true,
      paymentId: event.paymentId,
      amount,
      millimes: event.amount,
      state,
      source: event.source,
      card: cardDetailsOf(event.verification.details),
    };
    const result = await this.deps.orderService.addPaymentToOrder(ctx, order.id, {
      method: method.code,
      metadata: { ...metadata },
    });
    if (!isOrder(result))
      throw new Error(
        `nestjs-payments: adding payment ${event.paymentId} to order ${order.code} failed: ${result.message}`,
      );
    if (result.state === 'ArrangingAdditionalPayment') await this.leaveAdditionalPayment(ctx, order, state);
    Logger.info(
      `payment ${event.paymentId} added to order ${order.code} as ${state} (order now ${result.state})`,
      LOG_CONTEXT,
    );
  }

  /**
   * Vendure moves an order out of ArrangingPayment when its payments cover it, but leaves one in
   * ArrangingAdditionalPayment where it is: once covered, it goes back to PaymentSettled (or
   * PaymentAuthorized while a pre-authorization is held).
   */
  private async leaveAdditionalPayment(ctx: RequestContext, order: Order, state: VerifiedState): Promise<void> {
    const fresh = await this.deps.orderService.findOne(ctx, order.id, ['payments', 'payments.refunds']);
    if (!fresh || amountOwed(fresh.totalWithTax, fresh.payments ?? []) > 0) return;
    const held = state === 'Authorized' || (fresh.payments ?? []).some((p) => p.state === 'Authorized');
    const moved = await this.deps.orderService.transitionToState(
      ctx,
      order.id,
      held ? 'PaymentAuthorized' : 'PaymentSettled',
    );
    if (!isOrder(moved))
      Logger.warn(`order ${order.code} is paid but stays in ArrangingAdditionalPayment: ${moved.message}`, LOG_CONTEXT);
  }

  private async report(
    ctx: RequestContext,
    reason: UnexpectedPaymentReason,
    orderCode: string | undefined,
    event: PaymentOutcomeEvent,
    orderState: string | undefined,
    refunded = 'nothing was refunded',
  ): Promise<void> {
    Logger.error(
      `payment ${event.paymentId} (${event.amount} millimes, ${event.status}) of order ${orderCode ?? '?'} not added: ${reason}` +
        `${orderState ? ` (order ${orderState})` : ''}; ${refunded}`,
      LOG_CONTEXT,
    );
    await this.deps.eventBus.publish(
      new NestjsPaymentsUnexpectedPaymentEvent(ctx, reason, orderCode, event.paymentId, event.amount, orderState),
    );
  }
}
