import type { NextFunction, Request, Response } from 'express';

/**
 * Headers that make the server-rendered pages safe to show even if an escaping bug slipped in:
 * no scripts at all, inline styles only, no framing. `no-store` keeps the back button from
 * showing an order's stale state.
 */
export function securityHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader(
    'Content-Security-Policy',
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; frame-ancestors 'none'",
  );
  res.setHeader('X-Content-Type-Options', 'nosniff');
  res.setHeader('Referrer-Policy', 'same-origin');
  res.setHeader('Cache-Control', 'no-store');
  next();
}
