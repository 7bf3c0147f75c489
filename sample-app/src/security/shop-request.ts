import type { Request, Response } from 'express';

/** What the shop's middleware adds to each request of its pages. */
export interface ShopRequestState {
  /** The visitor's stable customer id (`cus_<hex>`, from the `shop_customer` cookie). */
  customerId: string;
  /** The signed-in admin session's id, when there is one. */
  adminSessionId?: string;
  /** The CSRF token to put in this page's forms (sets its cookie on first use). */
  csrfToken(): string;
}

/** The shop's request: Express's, with {@link ShopRequestState} once the middleware ran. */
export type ShopRequest = Request & { shop?: ShopRequestState };

/** The state the middleware attached. @throws Error when the route is not behind the shop's middleware (a wiring bug) */
export function shopState(req: Request): ShopRequestState {
  const state = (req as ShopRequest).shop;
  if (!state) throw new Error('the shop middleware did not run for this route');
  return state;
}

export type { Response };
