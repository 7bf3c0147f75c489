import type { IncomingMessage, ServerResponse } from 'node:http';
import { indexPage, messagePage, PAGE_SECURITY_HEADERS } from './sandbox.html.js';
import { send, sendHtml } from './sandbox.http.js';
import type { SandboxPayment } from './sandbox.types.js';

/** Path of the sandbox's own success page, the default `successLink` of {@link PaymentsSandbox.options}. */
export const SANDBOX_SUCCESS_PATH = '/sandbox/success';
/** Path of the sandbox's own failure page, the default `failLink` of {@link PaymentsSandbox.options}. */
export const SANDBOX_FAIL_PATH = '/sandbox/fail';

/** The favicon browsers ask for before reading the page's `<link rel="icon">`: nothing, but no 404. */
const FAVICON_PATH = '/favicon.ico';

/** The sandbox's own pages: the index, and the default success and failure targets. */
export function handlePage(
  req: IncomingMessage,
  res: ServerResponse,
  baseUrl: string,
  payments: SandboxPayment[],
): void {
  const readable = req.method === 'GET' || req.method === 'HEAD';
  const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
  if (readable && url.pathname === FAVICON_PATH)
    return send(res, 204, 'image/x-icon', '', { 'Cache-Control': 'max-age=86400', ...PAGE_SECURITY_HEADERS });
  if (readable && url.pathname === '/') return sendHtml(res, 200, indexPage(baseUrl, payments));
  if (readable && url.pathname === SANDBOX_SUCCESS_PATH)
    return sendHtml(
      res,
      200,
      messagePage('Payment successful', 'The sandbox payment succeeded. You can close this page.'),
    );
  if (readable && url.pathname === SANDBOX_FAIL_PATH)
    return sendHtml(
      res,
      200,
      messagePage('Payment failed', 'The sandbox payment failed or was declined. You can close this page.'),
    );
  sendHtml(res, 404, messagePage('Not found', 'There is nothing at this address.'));
}
