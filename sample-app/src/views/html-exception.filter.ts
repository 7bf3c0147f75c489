import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
  HttpException,
  HttpStatus,
  Inject,
  Logger,
} from '@nestjs/common';
import type { Response } from 'express';
import { SHOP_SETTINGS, type ShopSettings } from '../config/shop.settings.js';
import { LoginRequiredException } from '../security/admin.guard.js';
import { errorPage } from './error.view.js';

const TITLES: Record<number, string> = {
  [HttpStatus.BAD_REQUEST]: 'Bad request',
  [HttpStatus.NOT_FOUND]: 'Not found',
  [HttpStatus.FORBIDDEN]: 'Request refused',
  [HttpStatus.BAD_GATEWAY]: 'Payment service unavailable',
};

/**
 * Renders the shop's errors as HTML pages. Applied to the shop's controllers only (not
 * globally): the plugin's webhook route answers the payment service in JSON and must keep doing so.
 */
@Catch()
export class HtmlExceptionFilter implements ExceptionFilter {
  private readonly logger = new Logger('Shop');

  constructor(@Inject(SHOP_SETTINGS) private readonly settings: ShopSettings) {}

  /** Answers the error as a page; unexpected errors are logged and shown without details. */
  catch(exception: unknown, host: ArgumentsHost): void {
    const response = host.switchToHttp().getResponse<Response>();
    if (exception instanceof LoginRequiredException) {
      response.redirect(303, `/admin/login?next=${encodeURIComponent(exception.returnTo)}`);
      return;
    }
    let status: number = HttpStatus.INTERNAL_SERVER_ERROR;
    let text = 'Something went wrong on our side. Please try again.';
    if (exception instanceof HttpException) {
      status = exception.getStatus();
      const body = exception.getResponse();
      const message = typeof body === 'object' && body !== null && 'message' in body ? body.message : body;
      text = Array.isArray(message) ? message.join(' ') : String(message);
    } else {
      this.logger.error(exception instanceof Error ? (exception.stack ?? exception.message) : String(exception));
    }
    const title = TITLES[status] ?? (status >= 500 ? 'Something went wrong' : 'Request refused');
    response
      .status(status)
      .type('html')
      .send(errorPage({ sandboxMode: this.settings.sandboxMode }, title, text));
  }
}
