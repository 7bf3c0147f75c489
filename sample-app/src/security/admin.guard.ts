import { type CanActivate, type ExecutionContext, HttpException, HttpStatus, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { shopState } from './shop-request.js';

/** Thrown for an admin page without a session: the HTML filter sends the browser to the login page. */
export class LoginRequiredException extends HttpException {
  constructor(readonly returnTo: string) {
    super('Please sign in to the admin.', HttpStatus.UNAUTHORIZED);
  }
}

/** Lets through only requests with a valid admin session (see `ShopSecurity`). */
@Injectable()
export class AdminGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    if (shopState(req).adminSessionId !== undefined) return true;
    // Only a GET is worth coming back to after signing in; a form post is not replayed.
    throw new LoginRequiredException(req.method === 'GET' ? req.originalUrl : '/admin');
  }
}
