import { Inject, Injectable, Logger, type NestMiddleware } from '@nestjs/common';
import { doubleCsrf, type DoubleCsrfUtilities } from 'csrf-csrf';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import session from 'express-session';
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { SHOP_SETTINGS, type ShopSettings } from '../config/shop.settings.js';
import type { ShopDb } from '../db/database.js';
import { errorPage } from '../views/error.view.js';
import type { ShopRequest } from './shop-request.js';
import { logSafe } from './log-safe.js';
import { DrizzleSessionStore } from './session.store.js';

declare module 'express-session' {
  interface SessionData {
    /** Set once the admin password was given in this session. */
    admin?: boolean;
  }
}

/** Cookie of the visitor's customer id (what "save my card" sends as `client_id`). */
export const CUSTOMER_COOKIE = 'shop_customer';
/** Cookie of the admin session (express-session's signed session id). */
export const ADMIN_COOKIE = 'shop_admin';
/** Cookie half of the CSRF double submit (the other half is the forms' `_csrf` field). */
export const CSRF_COOKIE = 'shop_csrf';
/** Name of the hidden field every state-changing form carries. */
export const CSRF_FIELD = '_csrf';

const CUSTOMER_ID = /^cus_[0-9a-f]{16}$/;
const ADMIN_SESSION_HOURS = 8;

/**
 * The admin's sessions: express-session on `/admin`, its sessions in the shop's database
 * (`shop_sessions`), 8 hours at most. Mounted before the shop's routes (see shop.bootstrap.ts).
 */
export function adminSessionMiddleware(settings: ShopSettings, db: ShopDb): RequestHandler {
  return session({
    name: ADMIN_COOKIE,
    secret: settings.sessionSecret,
    store: new DrizzleSessionStore(db),
    resave: false,
    // No row and no cookie until someone signs in.
    saveUninitialized: false,
    // Behind a TLS proxy, X-Forwarded-Proto tells it the browser's connection is https.
    proxy: settings.secureCookies ? true : undefined,
    cookie: {
      path: '/admin',
      httpOnly: true,
      sameSite: 'strict',
      secure: settings.secureCookies,
      maxAge: ADMIN_SESSION_HOURS * 3600 * 1000,
    },
  });
}

/**
 * The shop's web security in one place: the customer cookie (signed: a planted id is replaced),
 * the admin session (server-side, see {@link adminSessionMiddleware}; the password is
 * `ADMIN_PASSWORD`), and CSRF protection (csrf-csrf's
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
    // Signed with the session secret (cookie-parser): an id someone planted in the browser (an
    // unsigned or forged cookie) reads as false and is replaced, so it never becomes the
    // client_id of this visitor's saved card.
    const cookies = (req.signedCookies ?? {}) as Record<string, unknown>;
    let customerId = typeof cookies[CUSTOMER_COOKIE] === 'string' ? cookies[CUSTOMER_COOKIE] : '';
    if (!CUSTOMER_ID.test(customerId)) {
      customerId = `cus_${randomBytes(8).toString('hex')}`;
      res.cookie(CUSTOMER_COOKIE, customerId, {
        signed: true,
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
    this.logger.warn(`${req.method} ${logSafe(req.path)}: refused, missing or invalid CSRF token`);
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

  /**
   * Starts an admin session: a new session id (never one the browser brought: no fixation),
   * marked signed in, saved before the answer so the next request finds it.
   */
  async startAdminSession(req: Request): Promise<void> {
    const current = req.session;
    await new Promise<void>((resolve, reject) =>
      current.regenerate((error: unknown) => (error ? reject(toError(error)) : resolve())),
    );
    req.session.admin = true;
    await new Promise<void>((resolve, reject) =>
      req.session.save((error: unknown) => (error ? reject(toError(error)) : resolve())),
    );
  }

  /** Ends the admin session: its row is deleted (the cookie is worth nothing after), and the cookie cleared. */
  async endAdminSession(req: Request, res: Response): Promise<void> {
    const current = req.session as Request['session'] | undefined;
    if (current)
      await new Promise<void>((resolve, reject) =>
        current.destroy((error: unknown) => (error ? reject(toError(error)) : resolve())),
      );
    res.clearCookie(ADMIN_COOKIE, {
      path: '/admin',
      httpOnly: true,
      sameSite: 'strict',
      secure: this.settings.secureCookies,
    });
  }

  // express-session signs its cookie and loads the row: a forged cookie, an expired session or
  // one ended at sign-out has no row, hence no `admin` flag.
  private adminSessionOf(req: Request): string | undefined {
    const current = req.session as Request['session'] | undefined;
    return current?.admin === true ? req.sessionID : undefined;
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

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}
