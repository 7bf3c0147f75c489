import {
  BadGatewayException,
  Body,
  Controller,
  Get,
  Header,
  Inject,
  Logger,
  NotFoundException,
  Param,
  Post,
  Query,
  Redirect,
  UseFilters,
} from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { PaymentsError, PaymentsService, type GeneratePaymentInput, type OutcomeRecord } from 'nestjs-payments';
import { Catalog } from '../catalog/catalog.service.js';
import { SHOP_SETTINGS, type ShopSettings } from '../config/shop.settings.js';
import { CsrfToken, CustomerId } from '../security/csrf-token.decorator.js';
import { logSafe } from '../security/log-safe.js';
import { HtmlExceptionFilter } from '../views/html-exception.filter.js';
import { orderPage, orderStatusPage, type ReturnPage } from '../views/order.view.js';
import type { Order, ReturnCheck } from './order.model.js';
import { OrdersRepository } from './orders.repository.js';

/** What `@Redirect()` handlers return: where to send the browser. */
interface RedirectTo {
  url: string;
  statusCode: number;
}

/** Checkout, and the pages the payment service sends the customer back to. */
@Controller('orders')
@UseFilters(HtmlExceptionFilter)
export class OrdersController {
  private readonly logger = new Logger('Orders');

  constructor(
    private readonly catalog: Catalog,
    private readonly orders: OrdersRepository,
    private readonly payments: PaymentsService,
    @Inject(SHOP_SETTINGS) private readonly settings: ShopSettings,
  ) {}

  /**
   * POST /orders (form fields `productId`, optional `saveCard`, and `_csrf`): creates the order
   * and its payment, then sends the customer to the payment service's checkout with a 303.
   * "Capture later" products are pre-authorized (`preAuthorization: true`); with "save my card"
   * the customer's id goes as `clientId`, and the service keeps the card once paid (a binding).
   */
  @Post()
  @Redirect()
  async checkout(
    @Body('productId') productId: unknown,
    @Body('saveCard') saveCard: unknown,
    @CustomerId() customerId: string,
  ): Promise<RedirectTo> {
    const product = this.catalog.find(productId);
    if (!product) throw new NotFoundException('This product does not exist (any more).');
    const clientId = saveCard === 'on' || saveCard === 'yes' ? customerId : undefined;
    const order = await this.orders.create(product, { clientId });
    try {
      const { paymentId, link } = await this.payments.generatePayment(this.paymentRequest(order));
      await this.orders.attachPayment(order.id, paymentId);
      return { url: link, statusCode: 303 };
    } catch (error) {
      if (!(error instanceof PaymentsError)) throw error;
      // The customer never saw a payment page, so nothing was charged: the order is failed.
      await this.orders.transition(order.id, {
        to: 'failed',
        from: ['pending'],
        source: 'checkout',
        detail: `payment not created: ${error.code}`,
      });
      this.logger.error(`order ${order.id}: could not create the payment: ${logSafe(error.message)}`);
      throw new BadGatewayException(
        'The payment service is not available right now. You have not been charged; please try again in a moment.',
      );
    }
  }

  /**
   * POST /orders/:id/pay (`attempt`, `_csrf`): pays a pending order again from its page (the first
   * payment page was closed, or is open in another tab). Each rendering of the page is one attempt,
   * its idempotency key: a double click answers the same payment, two tabs open two. When both are
   * paid, the plugin confirms one and reports the other as a duplicate, which the admin refunds.
   */
  @Post(':id/pay')
  @Redirect()
  async payAgain(@Param('id') orderId: string, @Body('attempt') attempt: unknown): Promise<RedirectTo> {
    const order = await this.find(orderId);
    if (order.status !== 'pending') return { url: `/orders/${order.id}`, statusCode: 303 };
    const key =
      typeof attempt === 'string' && /^[A-Za-z0-9_-]{8,64}$/.test(attempt)
        ? attempt
        : randomBytes(12).toString('base64url');
    try {
      const { paymentId, link } = await this.payments.generatePayment(this.paymentRequest(order), {
        idempotencyKey: `${order.id}:${key}`,
      });
      await this.orders.attachPayment(order.id, paymentId);
      return { url: link, statusCode: 303 };
    } catch (error) {
      if (!(error instanceof PaymentsError)) throw error;
      this.logger.error(`order ${order.id}: could not create another payment: ${logSafe(error.message)}`);
      throw new BadGatewayException(
        'The payment service is not available right now. You have not been charged; please try again in a moment.',
      );
    }
  }

  /**
   * GET /orders/:id: the order's page, its state and history, as the shop's database has them,
   * and any second charge of it (the plugin's duplicate records). It asks the payment service
   * nothing (the return pages, the webhook and the reconciliation do): reloading it costs no
   * verify call, whoever reloads it.
   */
  @Get(':id')
  @Header('Content-Type', 'text/html; charset=utf-8')
  async show(@Param('id') orderId: string, @CsrfToken() csrfToken: string): Promise<string> {
    const order = await this.find(orderId);
    const attempt = randomBytes(12).toString('base64url');
    return orderStatusPage({ sandboxMode: this.settings.sandboxMode }, order, await this.orders.events(order.id), {
      duplicates: await this.duplicatesOf(order),
      pay: { csrfToken, attempt },
    });
  }

  /**
   * GET /orders/:id/success?payment_id=...: where the service sends the customer after paying.
   * The redirect proves nothing (anyone can type it), so while the order is pending the page
   * asks the service (`reconcilePayment`, which verifies and runs the outcome handlers exactly
   * as a webhook would) and shows the verified state: paid as soon as the customer is back,
   * webhook or not.
   */
  @Get(':id/success')
  @Header('Content-Type', 'text/html; charset=utf-8')
  async success(@Param('id') orderId: string, @Query('payment_id') paymentId?: unknown): Promise<string> {
    return this.returnPage(orderId, paymentId, 'success');
  }

  /** GET /orders/:id/failed?payment_id=...: after a decline; verified the same way (declined -> failed). */
  @Get(':id/failed')
  @Header('Content-Type', 'text/html; charset=utf-8')
  async failed(@Param('id') orderId: string, @Query('payment_id') paymentId?: unknown): Promise<string> {
    return this.returnPage(orderId, paymentId, 'failed');
  }

  private async returnPage(orderId: string, returnedPaymentId: unknown, page: ReturnPage): Promise<string> {
    let order = await this.find(orderId);
    let check: ReturnCheck | undefined;
    if (
      typeof returnedPaymentId === 'string' &&
      returnedPaymentId !== order.paymentId &&
      /^[A-Za-z0-9_-]{1,100}$/.test(returnedPaymentId)
    ) {
      check = await this.otherPayment(order, returnedPaymentId);
      order = (await this.orders.get(order.id)) ?? order;
    }
    if (check === undefined && order.status === 'pending' && order.paymentId !== undefined) {
      // The order's own payment is verified; a payment_id in the URL is only a hint, and one
      // naming another payment is ignored (it cannot make this order paid).
      if (typeof returnedPaymentId === 'string' && returnedPaymentId !== order.paymentId) {
        this.logger.warn(
          `order ${order.id}: return with payment_id ${logSafe(returnedPaymentId, 64)}, not the order's; checking the order's payment`,
        );
      }
      check = await this.reconcile(order);
      order = (await this.orders.get(order.id)) ?? order;
    }
    return orderPage({ sandboxMode: this.settings.sandboxMode }, order, page, check);
  }

  private async reconcile(order: Order): Promise<ReturnCheck> {
    try {
      const result = await this.payments.reconcilePayment(order.paymentId!, {
        expected: { amount: order.amount, developerTrackingId: order.id },
      });
      if (result.outcome === 'mismatch')
        this.logger.error(
          `order ${order.id}: the service's record of payment ${result.paymentId} does not match the order`,
        );
      return { outcome: result.outcome, error: result.error };
    } catch (error) {
      if (!(error instanceof PaymentsError)) throw error;
      // The service is unreachable or refused: the page says "processing", the webhook or the
      // reconciliation will settle it.
      this.logger.warn(`order ${order.id}: could not verify payment ${order.paymentId}: ${logSafe(error.message)}`);
      return { outcome: 'unreachable', error: error.code };
    }
  }

  /**
   * A return with a payment_id that is not the order's: another payment of this order (two tabs,
   * "Pay again") is settled, and a second charge of a paid order is told as such; a payment of
   * another order is ignored (it cannot make this order paid, nor tell anything about it).
   */
  private async otherPayment(order: Order, paymentId: string): Promise<ReturnCheck | undefined> {
    try {
      const record = await this.payments.getOutcome(paymentId);
      if (record !== undefined && record.developerTrackingId !== order.id) {
        this.logger.warn(
          `order ${order.id}: return with payment_id ${logSafe(paymentId, 64)} of another order; ignored`,
        );
        return undefined;
      }
      // The plugin refuses a payment it generated for another order (its recorded tracking id).
      const result = await this.payments.reconcilePayment(paymentId, { expected: { developerTrackingId: order.id } });
      return result.outcome === 'duplicate' ? { outcome: 'duplicate', error: result.error } : undefined;
    } catch (error) {
      if (!(error instanceof PaymentsError)) throw error;
      this.logger.warn(
        `order ${order.id}: return with payment_id ${logSafe(paymentId, 64)}, not the order's: ${logSafe(error.message)}`,
      );
      return undefined;
    }
  }

  /** The order's second charges, from the plugin's records (newest first). */
  private async duplicatesOf(order: Order): Promise<OutcomeRecord[]> {
    try {
      const page = await this.payments.listOutcomes({ outcome: 'duplicate', limit: 500 });
      return page.items.filter((r) => r.developerTrackingId === order.id);
    } catch {
      return [];
    }
  }

  /** The payment of an order: its amount and tracking id, the per-order return pages, its capture mode and saved card. */
  private paymentRequest(order: Order): GeneratePaymentInput {
    const base = `${this.settings.publicUrl}/orders/${order.id}`;
    return {
      amount: order.amount,
      developerTrackingId: order.id,
      // Per-order return pages; the service adds ?payment_id=<id> to them.
      successLink: `${base}/success`,
      failLink: `${base}/failed`,
      ...(order.capture === 'later' && { preAuthorization: true }),
      ...(order.clientId !== undefined && { clientId: order.clientId }),
    };
  }

  private async find(orderId: string): Promise<Order> {
    const order = /^ord_[0-9a-f]{16}$/.test(orderId) ? await this.orders.get(orderId) : undefined;
    if (!order) throw new NotFoundException('There is no order with this number.');
    return order;
  }
}
