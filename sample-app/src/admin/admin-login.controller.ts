import { Body, Controller, Get, Header, Inject, Logger, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import type { Request, Response } from 'express';
import { SHOP_SETTINGS, type ShopSettings } from '../config/shop.settings.js';
import { CsrfToken } from '../security/csrf-token.decorator.js';
import { ShopSecurity } from '../security/shop-security.js';
import { loginPage } from '../views/admin.view.js';
import { HtmlExceptionFilter } from '../views/html-exception.filter.js';

/** Only admin pages are worth coming back to after signing in (no open redirect). */
export function safeAdminPath(next: unknown): string {
  return typeof next === 'string' && /^\/admin(?:[/?][^\\]*)?$/.test(next) && !next.startsWith('//') ? next : '/admin';
}

/** Signing in and out of the admin. */
@Controller('admin')
@UseFilters(HtmlExceptionFilter)
export class AdminLoginController {
  private readonly logger = new Logger('Admin');

  constructor(
    private readonly security: ShopSecurity,
    @Inject(SHOP_SETTINGS) private readonly settings: ShopSettings,
  ) {}

  /** GET /admin/login?next=/admin... */
  @Get('login')
  @Header('Content-Type', 'text/html; charset=utf-8')
  form(@CsrfToken() csrfToken: string, @Query('next') next?: unknown): string {
    return loginPage({ sandboxMode: this.settings.sandboxMode }, csrfToken, safeAdminPath(next));
  }

  /** POST /admin/login (`password`, `next`, `_csrf`): starts the session and goes to `next`. */
  @Post('login')
  async login(
    @Body('password') password: unknown,
    @Body('next') next: unknown,
    @CsrfToken() csrfToken: string,
    @Req() req: Request,
    @Res() res: Response,
  ): Promise<void> {
    if (!this.security.checkPassword(password)) {
      this.logger.warn('admin sign-in refused: wrong password');
      // Slows down guessing; the password itself is long and random by default.
      await new Promise((resolve) => setTimeout(resolve, 300));
      res
        .status(401)
        .type('html')
        .send(loginPage({ sandboxMode: this.settings.sandboxMode }, csrfToken, safeAdminPath(next), 'Wrong password.'));
      return;
    }
    await this.security.startAdminSession(req);
    res.redirect(303, safeAdminPath(next));
  }

  /** POST /admin/logout (`_csrf`): the session is deleted on the server, not only forgotten by the browser. */
  @Post('logout')
  async logout(@Req() req: Request, @Res() res: Response): Promise<void> {
    await this.security.endAdminSession(req, res);
    res.redirect(303, '/admin/login');
  }
}
