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
  Redirect,
  UseFilters,
} from '@nestjs/common';
import { PaymentsError, PaymentsService } from 'nestjs-payments';
import { Catalog } from '../catalog/catalog.service.js';
import { SHOP_SETTINGS, type ShopSettings } from '../config/shop.settings.js';
import { HtmlExceptionFilter } from '../views/html-exception.filter.js';
import { orderPage } from '../views/order.view.js';
import type { Order } from './order.model.js';
import { OrdersStore } from './orders.store.js';

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
    private readonly orders: OrdersStore,
    private readonly payments: PaymentsService,
    @Inject(SHOP_SETTINGS) private readonly settings: ShopSettings,
  ) {}

  /**
   * POST /orders (form field `productId`): creates the order and its payment, then sends the
   * customer to the payment service's checkout with a 303 (the browser then GETs it).
   */
  @Post()
  @Redirect()
  async checkout(@Body('productId') productId: unknown): Promise<RedirectTo> {
    const product = this.catalog.find(productId);
    if (!product) throw new NotFoundException('This product does not exist (any more).');
    const order = this.orders.create(product);
    const base = `${this.settings.publicUrl}/orders/${order.id}`;
    try {
      const { paymentId, link } = await this.payments.generatePayment({
        amount: product.amount,
        developerTrackingId: order.id,
        // Per-order return pages: the customer lands on their own order, no lookup needed.
        successLink: `${base}/success`,
        failLink: `${base}/failed`,
      });
      this.orders.attachPayment(order.id, paymentId);
      return { url: link, statusCode: 303 };
    } catch (error) {
      if (!(error instanceof PaymentsError)) throw error;
      // The customer never saw a payment page, so nothing was charged: the order is simply failed.
      this.orders.markFailed(order.id);
      this.logger.error(`order ${order.id}: could not create the payment: ${error.message}`);
      throw new BadGatewayException('The payment service is not available right now. You have not been charged; please try again in a moment.');
    }
  }

  /**
   * GET /orders/:id/success: where the service sends the customer after paying. The redirect
   * proves nothing (anyone can open this URL), so the page only shows what the confirmed
   * webhook recorded, and refreshes itself while the confirmation is on its way.
   */
  @Get(':id/success')
  @Header('Content-Type', 'text/html; charset=utf-8')
  success(@Param('id') orderId: string): string {
    return orderPage({ sandboxMode: this.settings.sandboxMode }, this.find(orderId), 'success');
  }

  /**
   * GET /orders/:id/failed: where the service sends the customer after a failed or declined
   * payment. The service sends no webhook for a decline, so this visit is the only signal: a
   * pending order becomes failed. That is safe to take from an unauthenticated GET because it
   * moves no money and is not final: a confirmation that arrives later still marks it paid.
   */
  @Get(':id/failed')
  @Header('Content-Type', 'text/html; charset=utf-8')
  failed(@Param('id') orderId: string): string {
    const order = this.find(orderId);
    const result = this.orders.markFailed(order.id);
    if (result?.changed) this.logger.log(`order ${order.id}: the customer came back from a failed payment`);
    return orderPage({ sandboxMode: this.settings.sandboxMode }, result?.order ?? order, 'failed');
  }

  private find(orderId: string): Order {
    const order = this.orders.get(orderId);
    if (!order) throw new NotFoundException('There is no order with this number.');
    return order;
  }
}
