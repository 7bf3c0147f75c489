// The part of Vendure's API (and of the GraphQL packages it brings) that lib/vendure uses, declared
// so that the repository type-checks and builds without installing Vendure (it needs Nest 11, the
// repository's development dependencies are Nest 12). This file is never emitted: the published
// .d.ts files import the real packages, and test/platforms/vendure type-checks the package and
// its guide's snippets against the real @vendure/core.
declare module '@vendure/core' {
  export type ID = string | number;
  export type ApiType = 'admin' | 'shop' | 'custom';
  export type PaymentMetadata = Record<string, unknown>;
  export interface Channel {
    id: ID;
    code: string;
    token: string;
  }
  export class RequestContext {
    constructor(options: {
      apiType: ApiType;
      channel: Channel;
      isAuthorized: boolean;
      authorizedAsOwnerOnly: boolean;
      languageCode?: LanguageCode;
    });
    readonly apiType: ApiType;
    readonly channel: Channel;
    readonly activeUserId: ID | undefined;
    readonly req: import('express').Request | undefined;
    translate(key: string, variables?: Record<string, string | number>): string;
    /** A shallow copy (its transaction with it), re-scoped to `channel` when given. */
    copy(channel?: Channel): RequestContext;
  }
  export class RequestContextService {
    create(config: {
      req?: import('express').Request;
      apiType: ApiType;
      channelOrToken?: Channel | string;
    }): Promise<RequestContext>;
  }
  export class PaymentService {
    cancelPayment(ctx: RequestContext, paymentId: ID): Promise<Payment | ErrorResultLike>;
  }
  export class OrderStateTransitionEvent extends VendureEvent {
    readonly fromState: string;
    readonly toState: string;
    readonly ctx: RequestContext;
    readonly order: Order;
  }
  export interface Refund {
    total: number;
    state: string;
  }
  export interface Payment {
    id: ID;
    amount: number;
    state: string;
    transactionId: string;
    method: string;
    refunds?: Refund[];
    metadata: PaymentMetadata;
  }
  export interface Order {
    id: ID;
    code: string;
    state: string;
    active: boolean;
    orderPlacedAt?: Date | null;
    currencyCode: string;
    totalWithTax: number;
    payments: Payment[];
    channels?: Channel[];
    customer?: { user?: { id: ID } | null } | null;
  }
  export class PaymentMethod {
    id: ID;
    code: string;
    enabled: boolean;
    handler: { code: string; args: Array<{ name: string; value: string }> };
  }
  export class VendureEvent {
    /** When the event was created. */
    readonly createdAt: Date;
  }
  export class Injector {
    get<T>(type: abstract new (...args: never[]) => T): T;
  }
  export enum LanguageCode {
    en = 'en',
  }
  export enum Permission {
    Owner = 'Owner',
    Public = 'Public',
  }
  export interface ErrorResultLike {
    errorCode: string;
    message: string;
  }
  export class OrderService {
    findOne(ctx: RequestContext, orderId: ID, relations?: string[]): Promise<Order | undefined>;
    findOneByCode(ctx: RequestContext, orderCode: string, relations?: string[]): Promise<Order | undefined>;
    getEligiblePaymentMethods(
      ctx: RequestContext,
      orderId: ID,
    ): Promise<Array<{ id: ID; code: string; isEligible: boolean }>>;
    transitionToState(ctx: RequestContext, orderId: ID, state: string): Promise<Order | ErrorResultLike>;
    addPaymentToOrder(
      ctx: RequestContext,
      orderId: ID,
      input: { method: string; metadata?: PaymentMetadata },
    ): Promise<Order | ErrorResultLike>;
  }
  export class ActiveOrderService {
    getActiveOrder(ctx: RequestContext, input: undefined): Promise<Order | undefined>;
  }
  export class PaymentMethodService {
    findAll(ctx: RequestContext): Promise<{ items: PaymentMethod[] }>;
  }
  export class ChannelService {
    getDefaultChannel(ctx?: RequestContext): Promise<Channel>;
    getChannelFromToken(token: string): Promise<Channel>;
  }
  export class ConfigService {
    readonly entityOptions: { moneyStrategy?: { readonly precision?: number } };
    readonly dbConnectionOptions: { readonly type?: string };
  }
  export class OrderStateMachine {
    transition(ctx: RequestContext, order: Order, state: string): Promise<{ finalize: () => Promise<unknown> }>;
  }
  export class TransactionalConnection {
    withTransaction<T>(ctx: RequestContext, work: (ctx: RequestContext) => Promise<T>): Promise<T>;
    /** A TypeORM repository on the context's transaction, if it has one (the part the plugin uses). */
    getRepository<T>(
      ctx: RequestContext,
      target: abstract new (...args: never[]) => T,
    ): { query(sql: string, params?: unknown[]): Promise<unknown> };
    /** TypeORM's DataSource (the part the plugin uses). */
    readonly rawConnection: {
      getRepository<T>(type: abstract new (...args: never[]) => T): { find(): Promise<T[]> };
    };
  }
  export class EventBus {
    publish(event: VendureEvent): Promise<void>;
    ofType<T extends VendureEvent>(
      type: abstract new (...args: never[]) => T,
    ): { subscribe(next: (event: T) => void): { unsubscribe(): void } };
  }
  export class ProcessContext {
    readonly isServer: boolean;
    readonly isWorker: boolean;
  }
  export class UserInputError extends Error {
    constructor(message: string, variables?: Record<string, string | number>);
  }
  export class Logger {
    static error(message: string, context?: string, trace?: string): void;
    static warn(message: string, context?: string): void;
    static info(message: string, context?: string): void;
    static verbose(message: string, context?: string): void;
  }
  export interface LocalizedString {
    languageCode: LanguageCode;
    value: string;
  }
  export interface CreatePaymentResult {
    amount: number;
    state: 'Authorized' | 'Settled' | 'Declined' | 'Error';
    transactionId?: string;
    errorMessage?: string;
    metadata?: PaymentMetadata;
  }
  export interface SettlePaymentResult {
    success: boolean;
    errorMessage?: string;
    metadata?: PaymentMetadata;
  }
  export interface CreateRefundResult {
    state: 'Pending' | 'Settled' | 'Failed';
    transactionId?: string;
    metadata?: PaymentMetadata;
  }
  export interface PaymentMethodHandlerConfig {
    code: string;
    description: LocalizedString[];
    args: Record<
      string,
      {
        type: 'boolean' | 'string';
        required?: boolean;
        defaultValue?: boolean | string;
        label?: LocalizedString[];
        description?: LocalizedString[];
        ui?: { component: string };
      }
    >;
    init?: (injector: Injector) => void | Promise<void>;
    createPayment: (
      ctx: RequestContext,
      order: Order,
      amount: number,
      args: Record<string, never>,
      metadata: PaymentMetadata,
    ) => Promise<CreatePaymentResult> | CreatePaymentResult;
    settlePayment: (
      ctx: RequestContext,
      order: Order,
      payment: Payment,
      args: Record<string, unknown>,
    ) => Promise<SettlePaymentResult>;
    cancelPayment?: (
      ctx: RequestContext,
      order: Order,
      payment: Payment,
      args: Record<string, unknown>,
    ) => Promise<SettlePaymentResult>;
    createRefund?: (
      ctx: RequestContext,
      input: unknown,
      amount: number,
      order: Order,
      payment: Payment,
      args: Record<string, never>,
    ) => Promise<CreateRefundResult>;
  }
  export class PaymentMethodHandler {
    constructor(config: PaymentMethodHandlerConfig);
    readonly code: string;
  }
  export interface RuntimeVendureConfig {
    paymentOptions: { paymentMethodHandlers: PaymentMethodHandler[] };
  }
  export const PluginCommonModule: unknown;
  export function VendurePlugin(metadata: {
    imports?: unknown[];
    providers?: unknown[];
    controllers?: unknown[];
    entities?: Array<abstract new (...args: never[]) => unknown>;
    shopApiExtensions?: { schema: unknown; resolvers: unknown[] };
    configuration?: (config: RuntimeVendureConfig) => RuntimeVendureConfig | Promise<RuntimeVendureConfig>;
    compatibility?: string;
  }): ClassDecorator;
  export function Ctx(): ParameterDecorator;
  export function Allow(...permissions: Permission[]): MethodDecorator;
}

declare module '@nestjs/graphql' {
  export function Resolver(): ClassDecorator;
  export function Mutation(): MethodDecorator;
  export function Args(name: string): ParameterDecorator;
}

declare module 'graphql' {
  export interface DocumentNode {
    readonly kind: 'Document';
  }
  export function parse(source: string): DocumentNode;
}
