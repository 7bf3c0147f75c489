import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { NESTJS_PAYMENTS_WEBHOOK_PATH } from './vendure.options.js';
import { NestjsPaymentsService } from './vendure.service.js';

/**
 * The service's webhooks, at `/nestjs-payments/webhook[/<token>]` on Vendure's server: the
 * engine authenticates the delivery, verifies the payment once and answers (2xx for duplicates
 * and for payments whose order needs nothing). @internal
 */
@Controller(NESTJS_PAYMENTS_WEBHOOK_PATH)
export class NestjsPaymentsWebhookController {
  constructor(private readonly service: NestjsPaymentsService) {}

  /** A delivery with the signed token in the path. */
  @Post(':token')
  postWithToken(@Param('token') token: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.receive(token, req, res);
  }

  /** A delivery by GET, with the signed token in the path. */
  @Get(':token')
  getWithToken(@Param('token') token: string, @Req() req: Request, @Res() res: Response): Promise<void> {
    return this.receive(token, req, res);
  }

  /** A delivery without a token (a URL set in the service's dashboard). */
  @Post()
  postWithoutToken(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.receive(undefined, req, res);
  }

  /** A delivery by GET without a token. */
  @Get()
  getWithoutToken(@Req() req: Request, @Res() res: Response): Promise<void> {
    return this.receive(undefined, req, res);
  }

  private async receive(token: string | undefined, req: Request, res: Response): Promise<void> {
    // The settlement it leads to builds its Vendure context on this request.
    // The account whose token this is (a payment method's own keys), else the plugin's.
    const client = await this.service.clientOfToken(token);
    const answer = await this.service.withRequest(req, () =>
      client.webhooks.handle({
        query: req.query,
        body: req.body as unknown,
        contentLength: req.headers['content-length'],
        pathToken: token,
      }),
    );
    for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
    res.status(answer.status).json(answer.body);
  }
}
