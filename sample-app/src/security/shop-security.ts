import { Inject, Injectable, Logger, type NestMiddleware } from '@nestjs/common';
import { doubleCsrf, type DoubleCsrfUtilities } from 'csrf-csrf';
import type { NextFunction, Request, Response } from 'express';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { SHOP_SETTINGS, type ShopSettings } from '../config/shop.settings.js';
import { errorPage } from '../views/error.view.js';
import type { ShopRequest } from './shop-request.js';

/** Cookie of the visitor's customer id (what "save my card" sends as `client_id`). */
export const CUSTOMER_COOKIE = 'shop_customer';
/** Signed cookie of the admin session. */
export const ADMIN_COOKIE = 'shop_admin';
/** Cookie half of the CSRF double submit (the other half is the forms' `_csrf` field). */
export const CSRF_COOKIE = 'shop_csrf';
/** Name of the hidden field every state-changing form carries. */
export const CSRF_FIELD = '_csrf';

const CUSTOMER_ID = /^cus_[0-9a-f]{16}$/;
const ADMIN_SESSION_HOURS = 8;

/**
 * The shop's web security in one place: the customer cookie, the admin session (a signed,
 * expiring cookie; the password is `ADMIN_PASSWORD`), and CSRF protection (csrf-csrf's
 * double submit: a cookie plus the same token in each form, HMAC-bound to the visitor's
 * customer id and admin session, so a token of one visitor or session is refused for another).
 */
@Injectable()
export class ShopSecurity {
  private readonly logger = new Logger('Security');
  private readonly csrf: DoubleCsrfUtilities;
  private readonly passwordHash: Buffer;

  constructor(@Inject(SHOP_SETTINGS) private readonly settings: ShopSettings) {
    this.passwordHash = sha256(settings.adminPassword);
    this.csrf = doubleCsrf({
      getSecret: () => settings.sessionSecret,
      getSessionIdentifier: (req) => {
        const state = (req as ShopRequest).shop;
        return `${state?.customerId ?? ''}|${state?.adminSessionId ?? ''}`;
      },
      cookieName: CSRF_COOKIE,
      cookieOptions: { sameSite: 'strict', path: '/', secure: settings.secureCookies, httpOnly: true },
      getCsrfTokenFromRequest: (req) => {
        const body = req.body as Record<string, unknown> | undefined;
        const field = body && typeof body === 'object' ? body[CSRF_FIELD] : undefined;
        return typeof field === 'string' ? field : req.headers['x-csrf-token'];
      },
    });
  }

  /**
   * Attaches the customer id, the admin session and the CSRF token generator to the request,
   * and refuses a state-changing request without a valid CSRF token (403 page).
   */
  handle(req: Request, res: Response, next: NextFunction): void {
    const cookies = (req.cookies ?? {}) as Record<string, unknown>;
    let customerId = typeof cookies[CUSTOMER_COOKIE] === 'string' ? cookies[CUSTOMER_COOKIE] : '';
    if (!CUSTOMER_ID.test(customerId)) {
      customerId = `cus_${randomBytes(8).toString('hex')}`;
      res.cookie(CUSTOMER_COOKIE, customerId, {
        httpOnly: true,
        sameSite: 'lax',
        secure: this.settings.secureCookies,
        path: '/',
        maxAge: 365 * 24 * 3600 * 1000,
      });
    }
    const shopReq = req as ShopRequest;
    let token: string | undefined;
    shopReq.shop = {
      customerId,
      adminSessionId: this.adminSessionOf(req),
      csrfToken: () => (token ??= this.csrf.generateCsrfToken(req, res)),
    };
    if (['GET', 'HEAD', 'OPTIONS'].includes(req.method) || this.csrf.validateRequest(req)) {
      next();
      return;
    }
    this.logger.warn(`${req.method} ${req.path}: refused, missing or invalid CSRF token`);
    res
      .status(403)
      .type('html')
      .send(
        errorPage(
          { sandboxMode: this.settings.sandboxMode },
          'Request refused',
          'This form has expired or was not sent from our pages. Go back, reload the page and try again.',
        ),
      );
  }

  /** Whether `password` is the admin password (constant time). */
  checkPassword(password: unknown): boolean {
    return typeof password === 'string' && timingSafeEqual(sha256(password), this.passwordHash);
  }

  /** Starts an admin session: a signed cookie with its expiry, scoped to /admin. */
  startAdminSession(res: Response): void {
    const expires = Date.now() + ADMIN_SESSION_HOURS * 3600 * 1000;
    res.cookie(ADMIN_COOKIE, `${randomBytes(16).toString('hex')}.${expires}`, {
      signed: true,
      httpOnly: true,
      sameSite: 'strict',
      secure: this.settings.secureCookies,
      path: '/admin',
      expires: new Date(expires),
    });
  }

  /** Ends the admin session (clears its cookie). */
  endAdminSession(res: Response): void {
    res.clearCookie(ADMIN_COOKIE, { path: '/admin', httpOnly: true, sameSite: 'strict', secure: this.settings.secureCookies });
  }

  // The cookie is signed with the session secret (cookie-parser): a forged or edited one reads
  // as false and is ignored, as is an expired one.
  private adminSessionOf(req: Request): string | undefined {
    const value: unknown = (req.signedCookies as Record<string, unknown> | undefined)?.[ADMIN_COOKIE];
    if (typeof value !== 'string') return undefined;
    const match = /^([0-9a-f]{32})\.([0-9]{13})$/.exec(value);
    if (!match || Number(match[2]) <= Date.now()) return undefined;
    return match[1];
  }
}

/** Nest middleware running {@link ShopSecurity.handle} on the shop's own routes (not the plugin's webhook). */
@Injectable()
export class ShopSecurityMiddleware implements NestMiddleware {
  constructor(private readonly security: ShopSecurity) {}

  use(req: Request, res: Response, next: NextFunction): void {
    this.security.handle(req, res, next);
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
