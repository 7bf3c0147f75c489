import { type ArgumentsHost, Catch, type ExceptionFilter, NotFoundException } from '@nestjs/common';
import type { Request, Response } from 'express';
import { errorPage } from './error.view.js';
import type { PageContext } from './layout.view.js';

/**
 * Answers requests that match no route with the shop's HTML 404 page (Nest's default is JSON).
 * Paths under the payments plugin's webhook keep the JSON answer: the service reads those.
 */
@Catch(NotFoundException)
export class NotFoundPageFilter implements ExceptionFilter {
  /**
   * @param ctx the pages' context
   * @param webhookPath the plugin's webhook path, e.g. `/payments/webhook`
   */
  constructor(
    private readonly ctx: PageContext,
    private readonly webhookPath: string,
  ) {}

  catch(exception: NotFoundException, host: ArgumentsHost): void {
    const req = host.switchToHttp().getRequest<Request>();
    const res = host.switchToHttp().getResponse<Response>();
    if (req.path === this.webhookPath || req.path.startsWith(`${this.webhookPath}/`)) {
      res.status(404).json(exception.getResponse());
      return;
    }
    res
      .status(404)
      .type('html')
      .send(errorPage(this.ctx, 'Not found', 'There is no page at this address.'));
  }
}
