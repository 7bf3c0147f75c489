import { type CanActivate, type ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import type { Request } from 'express';

/** Where the plugin's payments desk is mounted: under `/admin`, where the admin's session cookie is sent. */
export const PAYMENTS_DESK_PATH = 'admin/desk';

/** The desk's name for the one person the shop's admin password signs in. */
export const SHOP_ADMIN = { id: 'shop-admin', name: 'Shop admin' } as const;

/**
 * The payments desk's guard: the admin's own session (the same sign-in as `/admin`, read from the
 * server-side session the `/admin` session middleware loaded). Without one, 401: the desk shows
 * nothing and runs nothing.
 */
@Injectable()
export class PaymentsStaffGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    if ((req.session as Request['session'] | undefined)?.admin === true) return true;
    throw new UnauthorizedException('Sign in to the admin first (/admin/login).');
  }
}
