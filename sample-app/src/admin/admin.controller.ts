import {
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
  UseGuards,
} from '@nestjs/common';
import {
  fromMillimes,
  InjectPaymentsOptions,
  PaymentsService,
  toMillimes,
  type CardBinding,
  type PaymentsModuleOptions,
} from 'nestjs-payments';
import { SHOP_SETTINGS, type ShopSettings } from '../config/shop.settings.js';
import { SHOP_DATABASE, type ShopDatabase } from '../db/database.js';
import type { Order } from '../orders/order.model.js';
import { OrdersRepository, TRANSITIONS } from '../orders/orders.repository.js';
import { AdminGuard } from '../security/admin.guard.js';
import { CsrfToken } from '../security/csrf-token.decorator.js';
import { PAYMENTS_DESK_PATH } from '../security/payments-staff.guard.js';
import { adminPage, refundConfirmPage, type BindingsLookup } from '../views/admin.view.js';
import { HtmlExceptionFilter } from '../views/html-exception.filter.js';
import { FlashMessages } from './admin.flash.js';
import { describePaymentsError } from './admin.messages.js';

/** What `@Redirect()` handlers return. */
interface RedirectTo {
  url: string;
  statusCode: number;
}

/**
 * The shop's back office, behind the admin login (every route: {@link AdminGuard}) and CSRF
 * protection (every form): orders with Refund (after a confirmation page), Capture (all or part)
 * and Cancel for pre-authorized orders, the way to the payments desk (what needs a person about
 * payments: handlers failing, duplicates to refund), and the card-bindings lookup.
 *
 * Actions update the order in the same request, after the service said yes, through the same
 * guarded transitions as the outcome handlers: a double click or a stale tab changes nothing.
 */
@Controller('admin')
@UseFilters(HtmlExceptionFilter)
@UseGuards(AdminGuard)
export class AdminController {
  private readonly logger = new Logger('Admin');
  // Only the base URL is kept: the options also hold the private key, which no page may show.
  private readonly serviceUrl: string;
  private readonly databaseLabel: string;

  constructor(
    private readonly orders: OrdersRepository,
    private readonly payments: PaymentsService,
    private readonly flashes: FlashMessages,
    @Inject(SHOP_SETTINGS) private readonly settings: ShopSettings,
    @Inject(SHOP_DATABASE) database: ShopDatabase,
    @InjectPaymentsOptions() options: PaymentsModuleOptions,
  ) {
    this.serviceUrl = options.baseUrl;
    this.databaseLabel = `${database.kind === 'pglite' ? 'PGlite' : 'PostgreSQL'} (${database.location})`;
  }

  /** GET /admin, optionally `?flash=<id>` after an action and `?clientId=` for the bindings lookup. */
  @Get()
  @Header('Content-Type', 'text/html; charset=utf-8')
  async index(
    @CsrfToken() csrfToken: string,
    @Query('flash') flashId?: unknown,
    @Query('clientId') clientId?: unknown,
  ): Promise<string> {
    const [orders, bindings] = await Promise.all([
      this.orders.list(),
      typeof clientId === 'string' ? this.lookUpBindings(clientId.trim()) : undefined,
    ]);
    return adminPage(this.ctx(), {
      orders,
      flash: this.flashes.take(flashId),
      bindings,
      deskPath: `/${PAYMENTS_DESK_PATH}`,
      serviceUrl: this.serviceUrl,
      databaseLabel: this.databaseLabel,
      csrfToken,
    });
  }

  /** GET /admin/orders/:id/refund: the confirmation step before a refund. */
  @Get('orders/:id/refund')
  @Header('Content-Type', 'text/html; charset=utf-8')
  async confirmRefund(@Param('id') orderId: string, @CsrfToken() csrfToken: string): Promise<string> {
    const order = await this.find(orderId);
    return refundConfirmPage(this.ctx(), order, csrfToken);
  }

  /** POST /admin/orders/:id/refund (`confirm=yes`, `_csrf`): refunds the order's payment. Without `confirm`, back to the confirmation. */
  @Post('orders/:id/refund')
  @Redirect()
  async refund(@Param('id') orderId: string, @Body('confirm') confirm: unknown): Promise<RedirectTo> {
    const order = await this.find(orderId);
    if (confirm !== 'yes') return { url: `/admin/orders/${order.id}/refund`, statusCode: 303 };
    if (!order.paymentId) return this.back('error', 'There is no payment to refund for this order.');
    try {
      const refund = await this.payments.refundPayment(order.paymentId);
      await this.orders.transition(order.id, {
        to: 'refunded',
        from: TRANSITIONS.refunded,
        source: 'admin',
        serviceStatus: refund.status,
        detail: refund.refundId,
        set: { refundId: refund.refundId },
      });
      return this.back('success', `Refund of order ${order.id} succeeded (refund ${refund.refundId}).`);
    } catch (error) {
      return this.backWithError(error, `Refund of order ${order.id}`);
    }
  }

  /**
   * POST /admin/orders/:id/capture (`amount` in dinars, empty = all; `_csrf`): captures a
   * pre-authorized order (`capturePayment`); a part releases the rest of the hold.
   */
  @Post('orders/:id/capture')
  @Redirect()
  async capture(@Param('id') orderId: string, @Body('amount') rawAmount: unknown): Promise<RedirectTo> {
    const order = await this.find(orderId);
    if (!order.paymentId || order.status !== 'authorized')
      return this.back('error', `Order ${order.id} has no held amount to capture (it is ${order.status}).`);
    const amount = this.captureAmount(order, rawAmount);
    if (amount === undefined)
      return this.back(
        'error',
        `Enter an amount in TND from 0.001 to ${fromMillimes(order.amount)}, or leave it empty to capture all.`,
      );
    try {
      const partial = amount !== order.amount;
      const capture = await this.payments.capturePayment(order.paymentId, partial ? { amount } : {});
      const captured = capture.amount ?? amount;
      await this.orders.transition(order.id, {
        to: 'captured',
        from: TRANSITIONS.captured,
        source: 'admin',
        serviceStatus: capture.status,
        detail: `${captured} of ${order.amount} millimes`,
        set: { capturedAmount: Number(captured) },
      });
      return this.back(
        'success',
        `Captured ${fromMillimes(captured)} TND of order ${order.id}${partial ? `; the remaining ${fromMillimes(String(BigInt(order.amount) - BigInt(captured)))} TND are released` : ''}.`,
      );
    } catch (error) {
      return this.backWithError(error, `Capture of order ${order.id}`);
    }
  }

  /** POST /admin/orders/:id/cancel (`_csrf`): cancels a pre-authorization and releases the funds. */
  @Post('orders/:id/cancel')
  @Redirect()
  async cancel(@Param('id') orderId: string): Promise<RedirectTo> {
    const order = await this.find(orderId);
    if (!order.paymentId) return this.back('error', 'There is no payment to cancel for this order.');
    try {
      const cancellation = await this.payments.cancelPayment(order.paymentId);
      await this.orders.transition(order.id, {
        to: 'cancelled',
        from: TRANSITIONS.cancelled,
        source: 'admin',
        serviceStatus: cancellation.status,
      });
      return this.back('success', `Pre-authorization of order ${order.id} cancelled; the funds are released.`);
    } catch (error) {
      return this.backWithError(error, `Cancellation of order ${order.id}`);
    }
  }

  private captureAmount(order: Order, raw: unknown): string | undefined {
    if (raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return order.amount;
    if (typeof raw !== 'string') return undefined;
    let millimes: string;
    try {
      millimes = toMillimes(raw.trim());
    } catch {
      return undefined;
    }
    return BigInt(millimes) > 0n && BigInt(millimes) <= BigInt(order.amount) ? millimes : undefined;
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

  private async find(orderId: string): Promise<Order> {
    const order = /^ord_[0-9a-f]{16}$/.test(orderId) ? await this.orders.get(orderId) : undefined;
    if (!order) throw new NotFoundException('There is no order with this number.');
    return order;
  }

  private ctx() {
    return { sandboxMode: this.settings.sandboxMode };
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
