import { Body, Controller, Get, Header, Inject, Logger, Param, Post, Query, Redirect, UseFilters } from '@nestjs/common';
import { InjectPaymentsOptions, PaymentsService, type CardBinding, type PaymentsModuleOptions } from 'nestjs-payments';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import { Catalog } from '../catalog/catalog.service.js';
import { SHOP_SANDBOX } from '../config/sandbox.provider.js';
import { SHOP_SETTINGS, type ShopSettings } from '../config/shop.settings.js';
import { OrdersStore } from '../orders/orders.store.js';
import { adminPage, type BindingsLookup } from '../views/admin.view.js';
import { HtmlExceptionFilter } from '../views/html-exception.filter.js';
import { FlashMessages } from './admin.flash.js';
import { describePaymentsError } from './admin.messages.js';

/** What `@Redirect()` handlers return. */
interface RedirectTo {
  url: string;
  statusCode: number;
}

/**
 * The shop's back office: orders with Refund / Cancel, the card-bindings lookup, and (sandbox
 * only) a way to make a pre-authorized order. No login, as a demo: a real shop puts this
 * behind its staff authentication (and CSRF protection) before using real keys.
 */
@Controller('admin')
@UseFilters(HtmlExceptionFilter)
export class AdminController {
  private readonly logger = new Logger('Admin');
  // Only the base URL is kept: the options also hold the private key, which no page may show.
  private readonly serviceUrl: string;

  constructor(
    private readonly orders: OrdersStore,
    private readonly catalog: Catalog,
    private readonly payments: PaymentsService,
    private readonly flashes: FlashMessages,
    @Inject(SHOP_SETTINGS) private readonly settings: ShopSettings,
    @Inject(SHOP_SANDBOX) private readonly sandbox: PaymentsSandbox | null,
    @InjectPaymentsOptions() options: PaymentsModuleOptions,
  ) {
    this.serviceUrl = options.baseUrl;
  }

  /** GET /admin, optionally `?flash=<id>` after an action and `?clientId=` for the bindings lookup. */
  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  async index(@Query('flash') flashId?: unknown, @Query('clientId') clientId?: unknown): Promise<string> {
    return adminPage(
      { sandboxMode: this.settings.sandboxMode },
      {
        orders: this.orders.list(),
        products: this.catalog.list(),
        flash: this.flashes.take(flashId),
        bindings: typeof clientId === 'string' ? await this.lookUpBindings(clientId.trim()) : undefined,
        serviceUrl: this.serviceUrl,
      },
    );
  }

  /** POST /admin/orders/:id/refund: refunds the order's payment; the refund event updates the order. */
  @Post('orders/:id/refund')
  @Redirect()
  async refund(@Param('id') orderId: string): Promise<RedirectTo> {
    const order = this.orders.get(orderId);
    if (!order?.paymentId) return this.back('error', 'There is no payment to refund for this order.');
    try {
      const refund = await this.payments.refundPayment(order.paymentId);
      return this.back('success', `Refund of order ${order.id} succeeded (refund ${refund.refundId}).`);
    } catch (error) {
      return this.backWithError(error, `Refund of order ${order.id}`);
    }
  }

  /** POST /admin/orders/:id/cancel: cancels a pre-authorized payment; the cancel event updates the order. */
  @Post('orders/:id/cancel')
  @Redirect()
  async cancel(@Param('id') orderId: string): Promise<RedirectTo> {
    const order = this.orders.get(orderId);
    if (!order?.paymentId) return this.back('error', 'There is no payment to cancel for this order.');
    try {
      await this.payments.cancelPayment(order.paymentId);
      return this.back('success', `Pre-authorization of order ${order.id} cancelled; the funds are released.`);
    } catch (error) {
      return this.backWithError(error, `Cancellation of order ${order.id}`);
    }
  }

  /**
   * POST /admin/test-orders (form field `productId`): a pre-authorized order to try Cancel on.
   * Sandbox only: the service shows no endpoint that creates a pre-authorization.
   */
  @Post('test-orders')
  @Redirect()
  async createPreauthorized(@Body('productId') productId: unknown): Promise<RedirectTo> {
    if (!this.sandbox) return this.back('error', 'Pre-authorized test orders need the built-in sandbox.');
    const product = this.catalog.find(productId);
    if (!product) return this.back('error', 'Choose a product.');
    const order = this.orders.create(product, 'preauthorized');
    const paymentId = await this.sandbox.createPreauthorizedPayment({ amount: order.amount, developerTrackingId: order.id });
    this.orders.attachPayment(order.id, paymentId);
    return this.back('success', `Pre-authorized test order ${order.id} created (payment ${paymentId}).`);
  }

  private async lookUpBindings(clientId: string): Promise<BindingsLookup> {
    if (clientId === '') return { clientId, error: 'Enter a customer id.' };
    try {
      const bindings: CardBinding[] = await this.payments.listBindings(clientId);
      return { clientId, bindings };
    } catch (error) {
      const message = describePaymentsError(error, 'Bindings lookup');
      if (message === undefined) throw error;
      return { clientId, error: message };
    }
  }

  private backWithError(error: unknown, action: string): RedirectTo {
    const message = describePaymentsError(error, action);
    if (message === undefined) throw error;
    this.logger.warn(message);
    return this.back('error', message);
  }

  private back(kind: 'success' | 'error', text: string): RedirectTo {
    return { url: `/admin?flash=${this.flashes.put(kind, text)}`, statusCode: 303 };
  }
}
