import { Allow, Ctx, Permission, PluginCommonModule, RequestContext, VendurePlugin } from '@vendure/core';
import { createNestjsPaymentsHandler } from './vendure.handler.js';
import {
  NESTJS_PAYMENTS_PLUGIN_OPTIONS,
  NESTJS_PAYMENTS_WEBHOOK_PATH,
  type NestjsPaymentsPluginOptions,
} from './vendure.options.js';
import { NestjsPaymentsInboxEntry } from './vendure.inbox.js';
import { NestjsPaymentsService } from './vendure.service.js';
import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { Args, Mutation, Resolver } from '@nestjs/graphql';
import { parse } from 'graphql';
import type { PaymentLink, PaymentLinkInput, PaymentReturn } from './vendure.types.js';

/** The shop API's additions. @internal */
export const SHOP_API_SCHEMA = parse(`
  input NestjsPaymentsLinkInput {
    orderCode: String
    paymentMethodCode: String
    successLink: String
    failLink: String
  }
  type NestjsPaymentsLink {
    paymentId: String!
    link: String!
    millimes: String!
  }
  type NestjsPaymentsReturn {
    paymentId: String!
    outcome: String!
  }
  extend type Mutation {
    createNestjsPaymentsLink(input: NestjsPaymentsLinkInput): NestjsPaymentsLink!
    checkNestjsPaymentsReturn(paymentId: String!): NestjsPaymentsReturn!
  }
`);

/** Shop API: the payment link of the active order, and the customer's return. @internal */
@Resolver()
export class NestjsPaymentsShopResolver {
  constructor(private readonly service: NestjsPaymentsService) {}

  /** The payment link for what the active order owes. */
  @Mutation()
  @Allow(Permission.Owner)
  createNestjsPaymentsLink(
    @Ctx() ctx: RequestContext,
    @Args('input') input: PaymentLinkInput | null,
  ): Promise<PaymentLink> {
    return this.service.createLink(ctx, input ?? {});
  }

  /** Verifies the payment the customer came back from (the engine runs the order's settlement once). */
  @Mutation()
  @Allow(Permission.Public)
  checkNestjsPaymentsReturn(@Ctx() ctx: RequestContext, @Args('paymentId') paymentId: string): Promise<PaymentReturn> {
    return this.service.checkReturn(ctx, paymentId);
  }
}

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

/**
 * The Vendure plugin: registers the `nestjs-payments` PaymentMethodHandler, the shop API's
 * `createNestjsPaymentsLink` and `checkNestjsPaymentsReturn` mutations, and the webhook route
 * `/nestjs-payments/webhook`. Add `NestjsPaymentsPlugin.init(options)` to `plugins`
 * (docs/vendure.md).
 */
@VendurePlugin({
  imports: [PluginCommonModule],
  providers: [
    { provide: NESTJS_PAYMENTS_PLUGIN_OPTIONS, useFactory: () => NestjsPaymentsPlugin.options },
    NestjsPaymentsService,
  ],
  controllers: [NestjsPaymentsWebhookController],
  // The inbox table (nestjs_payments_inbox): each settlement's row, in the order's transaction.
  entities: [NestjsPaymentsInboxEntry],
  shopApiExtensions: { schema: SHOP_API_SCHEMA, resolvers: [NestjsPaymentsShopResolver] },
  configuration: (config) => {
    config.paymentOptions.paymentMethodHandlers.push(createNestjsPaymentsHandler());
    return config;
  },
  compatibility: '^3.0.0',
})
export class NestjsPaymentsPlugin {
  /** The options given to {@link NestjsPaymentsPlugin.init} (Vendure's plugin convention). */
  static options: NestjsPaymentsPluginOptions;

  /**
   * Configures the plugin; put the result in `plugins`.
   * @param options the client's options (credentials, `baseUrl`, `webhook`, `store`...) and `preAuthorization`
   */
  static init(options: NestjsPaymentsPluginOptions): typeof NestjsPaymentsPlugin {
    NestjsPaymentsPlugin.options = options;
    return NestjsPaymentsPlugin;
  }
}
