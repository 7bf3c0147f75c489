import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import {
  ActiveOrderService,
  ChannelService,
  ConfigService,
  EventBus,
  Logger,
  OrderService,
  OrderStateMachine,
  PaymentMethodService,
  RequestContext,
  TransactionalConnection,
  UserInputError,
  type Order,
  type PaymentMethod,
} from '@vendure/core';
import { PaymentsClient } from '../core/client/payments.client.js';
import type { PaymentsLogger } from '../core/common/payments.logger.js';
import {
  PaymentEvents,
  type PaymentEvent,
  type PaymentEventName,
  type PaymentOutcomeEvent,
} from '../core/settlement/payment.events.js';
import {
  decideSettlement,
  orderCodeOf,
  trackingIdOf,
  type UnexpectedPaymentReason,
  type VerifiedState,
} from './vendure.decision.js';
import { NestjsPaymentsUnexpectedPaymentEvent } from './vendure.events.js';
import { amountOwed, millimesToVendure, SERVICE_CURRENCY, vendureToMillimes } from './vendure.money.js';
import type { PaymentLink, PaymentLinkInput, PaymentReturn, VerifiedPaymentMetadata } from './vendure.types.js';
import {
  NESTJS_PAYMENTS_HANDLER_CODE,
  NESTJS_PAYMENTS_PLUGIN_OPTIONS,
  NESTJS_PAYMENTS_WEBHOOK_PATH,
  type NestjsPaymentsPluginOptions,
} from './vendure.options.js';

const LOG_CONTEXT = 'NestjsPaymentsPlugin';

function vendureLogger(): PaymentsLogger {
  return {
    log: (message) => Logger.verbose(message, LOG_CONTEXT),
    warn: (message) => Logger.warn(message, LOG_CONTEXT),
    error: (message) => Logger.error(message, LOG_CONTEXT),
  };
}

/** Whether a PaymentMethod's handler arguments ask for pre-authorizations. */
function preAuthorizes(method: PaymentMethod): boolean {
  return method.handler.args.some((arg) => arg.name === 'preAuthorization' && arg.value === 'true');
}

function isOrder(value: unknown): value is Order {
  return typeof value === 'object' && value !== null && 'code' in value && 'state' in value && !('errorCode' in value);
}

/**
 * The plugin's one service: owns the `PaymentsClient` (the settlement engine), creates payment
 * links, and is the engine's outcome dispatcher, which adds each verified payment to its order
 * once (the engine runs it once per payment, across paths, processes and instances sharing a store).
 */
@Injectable()
export class NestjsPaymentsService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly #client: PaymentsClient;

  constructor(
    @Inject(NESTJS_PAYMENTS_PLUGIN_OPTIONS) private readonly options: NestjsPaymentsPluginOptions,
    private readonly orderService: OrderService,
    private readonly activeOrderService: ActiveOrderService,
    private readonly paymentMethodService: PaymentMethodService,
    private readonly channelService: ChannelService,
    private readonly configService: ConfigService,
    private readonly connection: TransactionalConnection,
    private readonly eventBus: EventBus,
    private readonly stateMachine: OrderStateMachine,
  ) {
    const { preAuthorization: _preAuthorization, ...clientOptions } = options;
    this.#client = new PaymentsClient({
      ...clientOptions,
      webhook: { ...clientOptions.webhook, path: NESTJS_PAYMENTS_WEBHOOK_PATH },
      logger: vendureLogger(),
    });
  }

  /** The engine: webhooks, returns, capture, refund, cancel. */
  get client(): PaymentsClient {
    return this.#client;
  }

  /** Registers the dispatcher (which also starts reconciliation). */
  onApplicationBootstrap(): void {
    const dispatch = (name: PaymentEventName, event: PaymentEvent) => this.dispatch(name, event);
    this.#client.setOutcomeDispatcher(dispatch, dispatch);
  }

  /** Lets settlements in flight finish, then closes the client. */
  async onApplicationShutdown(): Promise<void> {
    await this.#client.close();
  }

  /** Vendure's money precision (decimals of the stored integers). */
  get precision(): number {
    return this.configService.entityOptions.moneyStrategy?.precision ?? 2;
  }

  /**
   * Creates the service's payment for what the active order still owes, after checking that the
   * order may move to ArrangingPayment (a dry run: nothing changes until the service verifies).
   * @throws UserInputError naming why no link can be made
   */
  async createLink(ctx: RequestContext, input: PaymentLinkInput): Promise<PaymentLink> {
    const order = await this.orderToPay(ctx, input.orderCode ?? undefined);
    const method = await this.paymentMethod(ctx, input.paymentMethodCode ?? undefined);
    const eligible = await this.orderService.getEligiblePaymentMethods(ctx, order.id);
    if (!eligible.some((m) => String(m.id) === String(method.id) && m.isEligible)) {
      throw new UserInputError(
        `nestjs-payments: payment method ${method.code} is not eligible for order ${order.code}`,
      );
    }
    if (order.state !== 'ArrangingPayment' && order.state !== 'ArrangingAdditionalPayment') {
      const copy = await this.orderService.findOne(ctx, order.id);
      if (!copy) throw new UserInputError('nestjs-payments: there is no active order');
      try {
        await this.stateMachine.transition(ctx, copy, 'ArrangingPayment');
      } catch (error) {
        throw new UserInputError(
          `nestjs-payments: order ${order.code} cannot move to ArrangingPayment: ${(error as Error).message}`,
        );
      }
    }
    if (order.currencyCode !== SERVICE_CURRENCY)
      throw new UserInputError(
        `nestjs-payments: the service takes ${SERVICE_CURRENCY} only; order ${order.code} is in ${order.currencyCode}`,
      );
    const owed = amountOwed(order.totalWithTax, order.payments ?? []);
    if (owed <= 0) throw new UserInputError(`nestjs-payments: order ${order.code} owes nothing`);
    const millimes = vendureToMillimes(owed, this.precision);
    const generated = await this.#client.generatePayment({
      amount: millimes,
      developerTrackingId: trackingIdOf(order.code, order.totalWithTax - owed),
      ...(input.successLink ? { successLink: input.successLink } : {}),
      ...(input.failLink ? { failLink: input.failLink } : {}),
      ...(this.options.preAuthorization || preAuthorizes(method) ? { preAuthorization: true } : {}),
    });
    Logger.info(`payment ${generated.paymentId} of ${millimes} millimes created for order ${order.code}`, LOG_CONTEXT);
    return { paymentId: generated.paymentId, link: generated.link, millimes };
  }

  /** The active order, or by code a placed order of the signed-in customer that owes more after a modification. */
  private async orderToPay(ctx: RequestContext, orderCode: string | undefined): Promise<Order> {
    if (orderCode === undefined) {
      const active = await this.activeOrderService.getActiveOrder(ctx, undefined);
      const order = active && (await this.orderService.findOne(ctx, active.id, ['payments', 'payments.refunds']));
      if (!order) throw new UserInputError('nestjs-payments: there is no active order');
      return order;
    }
    const order = await this.orderService.findOneByCode(ctx, orderCode, [
      'customer',
      'customer.user',
      'payments',
      'payments.refunds',
    ]);
    const owner = order?.customer?.user?.id;
    if (!order || owner === undefined || ctx.activeUserId === undefined || String(owner) !== String(ctx.activeUserId)) {
      throw new UserInputError(`nestjs-payments: no order ${orderCode} of the signed-in customer`);
    }
    if (order.state !== 'ArrangingAdditionalPayment') {
      throw new UserInputError(
        `nestjs-payments: order ${orderCode} is ${order.state}; by code, only an order in ArrangingAdditionalPayment is paid`,
      );
    }
    return order;
  }

  /** The customer's return: verifies the payment (through the engine: once, whichever path comes first). */
  async checkReturn(paymentId: string): Promise<PaymentReturn> {
    const result = await this.#client.reconcilePayment(paymentId);
    return { paymentId, outcome: result.outcome };
  }

  /**
   * The PaymentMethod using this handler: by code (the storefront's), or for a verified payment
   * the first one that pre-authorizes (or not) as the payment did, else the first one.
   */
  private async paymentMethod(
    ctx: RequestContext,
    code: string | undefined,
    verified?: VerifiedState,
  ): Promise<PaymentMethod> {
    const { items } = await this.paymentMethodService.findAll(ctx);
    const ours = items.filter(
      (m) => m.enabled && m.handler.code === NESTJS_PAYMENTS_HANDLER_CODE && (code === undefined || m.code === code),
    );
    const method = (verified && ours.find((m) => preAuthorizes(m) === (verified === 'Authorized'))) ?? ours[0];
    if (!method)
      throw new UserInputError(
        `nestjs-payments: no enabled payment method ${code ? `with code ${code} ` : ''}uses the ${NESTJS_PAYMENTS_HANDLER_CODE} handler`,
      );
    return method;
  }

  /** The engine's dispatcher: every event kind, mapped exhaustively. */
  private async dispatch(name: PaymentEventName, event: PaymentEvent): Promise<void> {
    switch (name) {
      case PaymentEvents.CONFIRMED:
        return this.settle(event as PaymentOutcomeEvent, 'Settled');
      case PaymentEvents.AUTHORIZED:
        return this.settle(event as PaymentOutcomeEvent, 'Authorized');
      case PaymentEvents.MISMATCH: {
        const outcome = event as PaymentOutcomeEvent;
        return this.report(
          await this.adminContext(),
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
      case PaymentEvents.DUPLICATE: {
        // A second charge of an order another payment already settled: the order stays as it is;
        // refund it (or set `duplicates: { refund: true }`).
        const outcome = event as PaymentOutcomeEvent;
        Logger.warn(
          `payment ${outcome.paymentId} of order ${outcome.developerTrackingId ?? '?'} is a second charge of a paid order: refund it`,
          LOG_CONTEXT,
        );
        return;
      }
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

  private async adminContext(channelToken?: string): Promise<RequestContext> {
    const channel = channelToken
      ? await this.channelService.getChannelFromToken(channelToken)
      : await this.channelService.getDefaultChannel();
    return new RequestContext({ apiType: 'admin', isAuthorized: true, authorizedAsOwnerOnly: false, channel });
  }

  /** Adds a verified payment to its order once, or reports it; throws (to be retried) only when Vendure failed. */
  private async settle(event: PaymentOutcomeEvent, verified: VerifiedState): Promise<void> {
    const code = orderCodeOf(event.developerTrackingId);
    const lookup = await this.adminContext();
    const found = code ? await this.orderService.findOneByCode(lookup, code, ['channels']) : undefined;
    if (!found || !code) return this.report(lookup, 'order-not-found', code, event, undefined);
    // The order's own channel (not the default one), where its payment method lives.
    const channel = found.channels?.find((c) => c.code !== '__default_channel__') ?? found.channels?.[0];
    const ctx = await this.adminContext(channel?.token);
    await this.connection.withTransaction(ctx, async (tx) => {
      const order = await this.orderService.findOneByCode(tx, code, ['payments']);
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
          return this.add(tx, order, event, action.state);
        default: {
          const unknown: never = action;
          throw new Error(`nestjs-payments: unhandled action ${JSON.stringify(unknown)}`);
        }
      }
    });
  }

  private async add(
    ctx: RequestContext,
    order: Order,
    event: PaymentOutcomeEvent,
    state: VerifiedState,
  ): Promise<void> {
    let amount: number;
    try {
      amount = millimesToVendure(event.amount, this.precision);
    } catch {
      return this.report(ctx, 'amount-mismatch', order.code, event, order.state);
    }
    if (order.state !== 'ArrangingPayment' && order.state !== 'ArrangingAdditionalPayment') {
      const moved = await this.orderService.transitionToState(ctx, order.id, 'ArrangingPayment');
      // The customer has paid but the order cannot take it (stock, eligibility...): reported, kept.
      if (!isOrder(moved)) return this.report(ctx, 'order-not-payable', order.code, event, order.state);
    }
    const method = await this.paymentMethod(ctx, undefined, state);
    const metadata: VerifiedPaymentMetadata = {
      nestjsPayments: true,
      paymentId: event.paymentId,
      amount,
      millimes: event.amount,
      state,
      source: event.source,
    };
    const result = await this.orderService.addPaymentToOrder(ctx, order.id, {
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
    const fresh = await this.orderService.findOne(ctx, order.id, ['payments', 'payments.refunds']);
    if (!fresh || amountOwed(fresh.totalWithTax, fresh.payments ?? []) > 0) return;
    const held = state === 'Authorized' || (fresh.payments ?? []).some((p) => p.state === 'Authorized');
    const moved = await this.orderService.transitionToState(
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
  ): Promise<void> {
    Logger.error(
      `payment ${event.paymentId} (${event.amount} millimes, ${event.status}) of order ${orderCode ?? '?'} not added: ${reason}` +
        `${orderState ? ` (order ${orderState})` : ''}; nothing was refunded`,
      LOG_CONTEXT,
    );
    await this.eventBus.publish(
      new NestjsPaymentsUnexpectedPaymentEvent(ctx, reason, orderCode, event.paymentId, event.amount, orderState),
    );
  }
}
