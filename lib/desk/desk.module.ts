import type { DeskAuthorization, PaymentsDeskBaseOptions } from './desk.options.js';

/**
 * A Nest guard class (`CanActivate`), as `@UseGuards()` takes it: the host's own authentication
 * (a session guard, `AuthGuard('jwt')`, a role check). Typed by its shape, so that this entry's
 * types name no Nest package.
 */
export type DeskGuard = abstract new (...args: never[]) => {
  /** Nest's `CanActivate.canActivate`: true lets the request in. */
  canActivate(context: never): unknown;
};

/** Options of {@link PaymentsDeskModule.forRoot}. */
export interface PaymentsDeskModuleOptions<R = unknown> extends PaymentsDeskBaseOptions {
  /** The desk's path, under the app's global prefix (e.g. `admin/payments`). */
  path: string;
  /**
   * The host's guard, run before every page and action (required: the desk refuses to be built
   * without one). A guard that answers false gives 403; one that throws `UnauthorizedException`, 401.
   */
  guard: DeskGuard;
  /**
   * Who the guard let in, from the request. Default: the request's `user` (set by Passport and
   * most guards): a string, or its `id`, `sub`, `username` or `email`. A request the guard let in
   * without a principal gets 403.
   */
  principal?: (request: R) => DeskAuthorization;
  /** The registration (`PaymentsModule.forRoot({ name })`) whose payments the desk shows. Default: the default registration. */
  registration?: string;
}

/** What `forRoot` resolves to: a Nest dynamic module (typed by its shape: this entry's types name no Nest package). */
export interface PaymentsDeskDynamicModule {
  /** The module class Nest registers. */
  module: {
    /** Nest instantiates it. */
    new (...args: never[]): object;
  };
}

function refuse(problem: string): never {
  throw new TypeError(`PaymentsDeskModule.forRoot: ${problem}`);
}

/**
 * The payments desk for a Nest app (Express or Fastify adapter), beside `PaymentsModule`:
 *
 * ```ts
 * @Module({ imports: [PaymentsModule.forRoot(options), PaymentsDeskModule.forRoot({ path: 'desk', guard: AdminGuard })] })
 * ```
 * Nest is loaded only by `forRoot`, so this entry also serves Express apps without Nest.
 */
export class PaymentsDeskModule {
  /**
   * The desk's module, served under `options.path` behind `options.guard`.
   * @throws TypeError without `path` or `guard` (the desk is never served unguarded)
   */
  static forRoot<R = unknown>(options: PaymentsDeskModuleOptions<R>): Promise<PaymentsDeskDynamicModule> {
    const given = options as Partial<PaymentsDeskModuleOptions<R>> | undefined;
    if (typeof given?.guard !== 'function')
      refuse(
        'options.guard is required: the desk shows payments and refunds them, so it is never served unguarded. Pass your authentication guard class, e.g. { guard: AdminGuard }',
      );
    if (typeof given.path !== 'string' || given.path.replace(/^\/+|\/+$/g, '') === '')
      refuse("options.path is required: the desk's own path, e.g. 'admin/payments'");
    return import('./desk.nest.js').then(({ deskModule }) => deskModule(options));
  }
}
