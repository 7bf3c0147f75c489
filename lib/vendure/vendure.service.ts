import { AsyncLocalStorage } from 'node:async_hooks';
import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import type { Request } from 'express';
import {
  ActiveOrderService,
  ConfigService,
  EventBus,
  Logger,
  OrderService,
  OrderStateMachine,
  OrderStateTransitionEvent,
  PaymentMethod,
  PaymentMethodService,
  PaymentService,
  RequestContext,
  RequestContextService,
  TransactionalConnection,
  UserInputError,
  type ID,
  type Order,
} from '@vendure/core';
import { adjustedPaymentRequest, type GeneratePaymentInput } from '../core/api/index.js';
import type { PaymentsClient } from '../core/client/index.js';
import type { PaymentsLogger } from '../core/common/index.js';
import { everyEventTo } from '../core/settlement/index.js';
import { isTransactional } from '../core/store/index.js';
import { VendureAccounts } from './vendure.accounts.js';
import { methodAccountOf } from './vendure.credentials.js';
import { trackingIdOf, type VerifiedState } from './vendure.decision.js';
import { vendureInbox, vendureInboxPlanOf } from './vendure.inbox.js';
import { memoryStoreWarning, plainVendureMessage } from './vendure.messages.js';
import { amountOwed, SERVICE_CURRENCY, vendureToMillimes } from './vendure.money.js';
import { isOrder, LOG_CONTEXT, VendureSettlement } from './vendure.settle.js';
import type { PaymentLink, PaymentLinkInput, PaymentReturn } from './vendure.types.js';
import {
  NESTJS_PAYMENTS_HANDLER_CODE,
  NESTJS_PAYMENTS_PLUGIN_OPTIONS,
  NESTJS_PAYMENTS_WEBHOOK_PATH,
  ZERO_TOTAL_MARK,
  type NestjsPaymentsPluginOptions,
} from './vendure.options.js';

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

/**
 * The plugin's one service: owns the `PaymentsClient` (the settlement engine), creates payment
 * links, and registers the engine's outcome dispatcher (`VendureSettlement`), which adds each verified
 * payment to its order once (the engine runs it once per payment, across paths, processes and instances).
 */
@Injectable()
export class NestjsPaymentsService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly #accounts: VendureAccounts;
  readonly #settlement: VendureSettlement;
  /** The request (webhook, storefront's return) a settlement runs for, if any. */
  readonly #requests = new AsyncLocalStorage<Request>();
  #cancellations: { unsubscribe(): void } | undefined;

  constructor(
    @Inject(NESTJS_PAYMENTS_PLUGIN_OPTIONS) private readonly options: NestjsPaymentsPluginOptions,
    private readonly orderService: OrderService,
    private readonly activeOrderService: ActiveOrderService,
    private readonly paymentMethodService: PaymentMethodService,
    private readonly requestContextService: RequestContextService,
    private readonly configService: ConfigService,
    private readonly connection: TransactionalConnection,
    private readonly eventBus: EventBus,
    private readonly stateMachine: OrderStateMachine,
    private readonly paymentService: PaymentService,
  ) {
    const warning = memoryStoreWarning(options.store, process.env.NODE_ENV);
    if (warning) Logger.warn(warning, LOG_CONTEXT);
    const {
      preAuthorization: _preAuthorization,
      storeForPaymentMethod,
      paymentRequest: _paymentRequest,
      ...clientOptions
    } = options;
    const requestContext = (channelToken?: string) =>
      this.requestContextService.create({
        apiType: 'admin',
        channelOrToken: channelToken,
        req: this.#requests.getStore(),
      });
    // Exactly-once settlements: each order's Payment and transition commit with the inbox row, in
    // Vendure's own transaction (docs/vendure.md, "What happens once").
    const plan = vendureInboxPlanOf({
      dbType: configService.dbConnectionOptions.type,
      transactionalStore: options.store !== undefined && isTransactional(options.store),
    });
    if (plan.kind === 'none')
      Logger.warn(`nestjs-payments: settlements run without the inbox: ${plan.reason}`, LOG_CONTEXT);
    const inbox = plan.kind === 'inbox' ? vendureInbox(connection, plan.dialect, () => requestContext()) : undefined;
    this.#accounts = new VendureAccounts({
      options: {
        ...clientOptions,
        webhook: { ...clientOptions.webhook, path: NESTJS_PAYMENTS_WEBHOOK_PATH },
        ...(inbox ? { inbox } : {}),
      },
      logger: vendureLogger(),
      ...(storeForPaymentMethod ? { storeFor: storeForPaymentMethod } : {}),
      handlers: (methodCode) => everyEventTo((name, event) => this.#settlement.dispatch(name, event, methodCode)),
      // Every channel's: a webhook or a reconciliation names no channel.
      methods: () => this.connection.rawConnection.getRepository(PaymentMethod).find(),
      handlerCode: NESTJS_PAYMENTS_HANDLER_CODE,
    });
    this.#settlement = new VendureSettlement({
      orderService,
      requestContext,
      connection,
      eventBus,
      paymentMethod: (ctx, code, verified) => this.paymentMethod(ctx, code, verified),
      precision: () => this.precision,
    });
  }

  /** The engine of the plugin's own account (its options' keys): webhooks, returns, capture, refund, cancel. */
  get client(): PaymentsClient {
    return this.#accounts.plugin;
  }

  /** The engine of a payment method's account (its own keys, else the plugin's), by the method's code in `ctx`'s channel. */
  async clientOfMethod(ctx: RequestContext, methodCode: string): Promise<PaymentsClient> {
    const { items } = await this.paymentMethodService.findAll(ctx);
    const method = items.find((m) => m.code === methodCode && m.handler.code === NESTJS_PAYMENTS_HANDLER_CODE);
    return method ? this.#accounts.clientOf(method) : this.#accounts.plugin;
  }

  /** The engine whose webhook token this is (a payment method's own account's, else the plugin's). */
  clientOfToken(token: string | undefined): Promise<PaymentsClient> {
    return this.#accounts.forToken(token);
  }

  /**
   * Runs `work` (a webhook's handling, a return's check) with the request that asked for it: the
   * settlements it leads to build their context on it, as Vendure's own payment plugins do.
   */
  withRequest<T>(req: Request | undefined, work: () => Promise<T>): Promise<T> {
    return req ? this.#requests.run(req, work) : work();
  }

  /**
   * Registers the dispatcher (which also starts reconciliation), and releases the held
   * pre-authorizations of every order that is cancelled.
   */
  onApplicationBootstrap(): void {
    this.#accounts.start();
    this.#cancellations = this.eventBus.ofType(OrderStateTransitionEvent).subscribe((event) => {
      if (event.toState === 'Cancelled') void this.releaseHolds(event.ctx, event.order.id, event.order.code);
    });
  }

  /** Lets settlements in flight finish, then closes the client. */
  async onApplicationShutdown(): Promise<void> {
    this.#cancellations?.unsubscribe();
    await this.#accounts.close();
  }

  /**
   * A cancelled order's pre-authorizations of this plugin still held (`Authorized`) are cancelled
   * through Vendure (`PaymentService.cancelPayment`: the handler's `cancel_payment`, the Payment
   * `Cancelled`); a failure is logged, the hold then stays until the service lets it lapse.
   */
  private async releaseHolds(ctx: RequestContext, orderId: ID, orderCode: string): Promise<void> {
    try {
      await this.connection.withTransaction(ctx, async (tx) => {
        const order = await this.orderService.findOne(tx, orderId, ['payments']);
        const { items } = await this.paymentMethodService.findAll(tx);
        const ours = new Set(items.filter((m) => m.handler.code === NESTJS_PAYMENTS_HANDLER_CODE).map((m) => m.code));
        for (const payment of order?.payments ?? []) {
          if (payment.state !== 'Authorized' || !ours.has(payment.method)) continue;
          const result = await this.paymentService.cancelPayment(tx, payment.id);
          const state = 'state' in result ? result.state : result.message;
          if (state !== 'Cancelled')
            Logger.error(
              `order ${orderCode} was cancelled but its pre-authorization ${payment.transactionId} is still held (payment ${state}): cancel the payment in the Admin`,
              LOG_CONTEXT,
            );
          else
            Logger.info(
              `order ${orderCode} cancelled: pre-authorization ${payment.transactionId} released`,
              LOG_CONTEXT,
            );
        }
      });
    } catch (error) {
      Logger.error(
        `order ${orderCode} was cancelled but releasing its pre-authorizations failed: ${(error as Error).message}; cancel the payment in the Admin`,
        LOG_CONTEXT,
      );
    }
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
          `nestjs-payments: order ${order.code} cannot move to ArrangingPayment: ${plainVendureMessage(ctx, error)}`,
        );
      }
    }
    if (order.currencyCode !== SERVICE_CURRENCY)
      throw new UserInputError(
        `nestjs-payments: the service takes ${SERVICE_CURRENCY} only; order ${order.code} is in ${order.currencyCode}`,
      );
    if (order.totalWithTax === 0) return this.settleZeroTotal(ctx, order, method, input);
    const owed = amountOwed(order.totalWithTax, order.payments ?? []);
    if (owed <= 0) throw new UserInputError(`nestjs-payments: order ${order.code} owes nothing`);
    const millimes = vendureToMillimes(owed, this.precision);
    let client: PaymentsClient;
    try {
      client = this.#accounts.clientOf(method);
    } catch (error) {
      throw new UserInputError((error as Error).message);
    }
    const request: GeneratePaymentInput = {
      amount: millimes,
      developerTrackingId: trackingIdOf(order.code, order.totalWithTax - owed),
      ...(input.successLink ? { successLink: input.successLink } : {}),
      ...(input.failLink ? { failLink: input.failLink } : {}),
      ...(this.options.preAuthorization || preAuthorizes(method) ? { preAuthorization: true } : {}),
    };
    let adjusted: GeneratePaymentInput;
    try {
      adjusted = adjustedPaymentRequest(
        request,
        await this.options.paymentRequest?.(ctx, order, { ...request }),
        'paymentRequest',
      );
    } catch (error) {
      Logger.error(`order ${order.code}: ${(error as Error).message}`, LOG_CONTEXT);
      throw new UserInputError((error as Error).message);
    }
    const generated = await client.generatePayment(adjusted);
    Logger.info(`payment ${generated.paymentId} of ${millimes} millimes created for order ${order.code}`, LOG_CONTEXT);
    return { paymentId: generated.paymentId, link: generated.link, millimes };
  }

  /**
   * An order that totals zero (a 100% discount, free shipping) is settled at once, without the
   * service (which takes no zero payment), as Vendure's own payment plugins do: a `Settled`
   * payment of 0 of this method. Answers the storefront's `successLink` to send the customer to
   * (the input's, else the plugin's), with no payment id.
   */
  private async settleZeroTotal(
    ctx: RequestContext,
    order: Order,
    method: PaymentMethod,
    input: PaymentLinkInput,
  ): Promise<PaymentLink> {
    // Vendure adds payments inside a transaction only: the move and the payment commit together.
    const result = await this.connection.withTransaction(ctx, async (tx) => {
      if (order.state !== 'ArrangingPayment') {
        const moved = await this.orderService.transitionToState(tx, order.id, 'ArrangingPayment');
        if (!isOrder(moved))
          throw new UserInputError(
            `nestjs-payments: order ${order.code} cannot move to ArrangingPayment: ${plainVendureMessage(tx, moved.message)}`,
          );
      }
      const added = await this.orderService.addPaymentToOrder(tx, order.id, {
        method: method.code,
        metadata: { [ZERO_TOTAL_MARK]: true },
      });
      if (!isOrder(added))
        throw new UserInputError(`nestjs-payments: order ${order.code} totals 0 but was not settled: ${added.message}`);
      return added;
    });
    Logger.info(`order ${order.code} totals 0: settled without the service (order now ${result.state})`, LOG_CONTEXT);
    return { paymentId: '', link: input.successLink ?? this.options.successLink ?? '', millimes: '0' };
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
  async checkReturn(ctx: RequestContext, paymentId: string): Promise<PaymentReturn> {
    const client = await this.#accounts.forPayment(paymentId);
    const result = await this.withRequest(ctx.req, () => client.reconcilePayment(paymentId));
    return { paymentId, outcome: result.outcome };
  }

  /**
   * The PaymentMethod using this handler: by code (the storefront's, or the method whose own
   * account verified the payment), or for a verified payment of the plugin's account the first
   * one of that account that pre-authorizes (or not) as the payment did, else the first one.
   */
  private async paymentMethod(
    ctx: RequestContext,
    code: string | undefined,
    verified?: VerifiedState,
  ): Promise<PaymentMethod> {
    const { items } = await this.paymentMethodService.findAll(ctx);
    const ours = items.filter(
      (m) =>
        m.enabled &&
        m.handler.code === NESTJS_PAYMENTS_HANDLER_CODE &&
        (code === undefined ? methodAccountOf(m.handler.args).kind === 'plugin' : m.code === code),
    );
    const method = (verified && ours.find((m) => preAuthorizes(m) === (verified === 'Authorized'))) ?? ours[0];
    if (!method)
      throw new UserInputError(
        `nestjs-payments: no enabled payment method ${code ? `with code ${code} ` : ''}uses the ${NESTJS_PAYMENTS_HANDLER_CODE} handler`,
      );
    return method;
  }
}
