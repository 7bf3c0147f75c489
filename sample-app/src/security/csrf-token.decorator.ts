import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { shopState } from './shop-request.js';

/** Injects the CSRF token for the page's forms (and sets its cookie). */
export const CsrfToken = createParamDecorator((_data: unknown, context: ExecutionContext): string =>
  shopState(context.switchToHttp().getRequest<Request>()).csrfToken(),
);

/** Injects the visitor's customer id (`cus_<hex>`). */
export const CustomerId = createParamDecorator(
  (_data: unknown, context: ExecutionContext): string =>
    shopState(context.switchToHttp().getRequest<Request>()).customerId,
);
