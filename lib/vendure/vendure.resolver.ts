import { Args, Mutation, Resolver } from '@nestjs/graphql';
import { Allow, Ctx, Permission, RequestContext } from '@vendure/core';
import { parse } from 'graphql';
import { NestjsPaymentsService } from './vendure.service.js';
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
