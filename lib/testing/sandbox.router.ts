import type { IncomingMessage, ServerResponse } from 'node:http';
import { handleApiRequest } from './sandbox.api.js';
import { handleCheckoutRequest, type SettleOutcome } from './sandbox.checkout.js';
import { handleControlRequest } from './sandbox.control.js';
import { applyFault, type SandboxFaults } from './sandbox.faults.js';
import { messagePage } from './sandbox.html.js';
import { readBody, sendHtml, sendJson } from './sandbox.http.js';
import type { VerifyLimiter } from './sandbox.ratelimit.js';
import { handlePage } from './sandbox.pages.js';
import { isApiPath, loggedRequest } from './sandbox.request.js';
import type { SandboxState, Settlement } from './sandbox.state.js';
import type { SandboxGenerateAnswer, SandboxRequest } from './sandbox.types.js';

/** What the router needs of a running sandbox. */
export interface SandboxRoutes {
  /** The payments. */
  state: SandboxState;
  /** Injected faults, taken per request. */
  faults: SandboxFaults;
  /** The `Authorization` value the API accepts. */
  authorization: string;
  /** The shape of generate_payment's answer. */
  generateAnswer: SandboxGenerateAnswer;
  /** The verify rate limit. */
  verifyLimiter: VerifyLimiter;
  /** Aborted when the sandbox closes. */
  signal: AbortSignal;
  /** The sandbox's own base URL. */
  baseUrl: string;
  /** Keeps an API request in the log. */
  log: (request: SandboxRequest) => void;
  /** Settles a payment from the checkout page or a control route. */
  settle: (paymentId: string, outcome: Settlement) => Promise<SettleOutcome>;
}

/**
 * One request to the sandbox: logged (API only, without the private key), a fault applied if one
 * was injected, then the API, the checkout page or the sandbox's own pages.
 */
export async function routeRequest(routes: SandboxRoutes, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let url: URL;
  try {
    url = new URL(req.url ?? '/', 'http://sandbox.invalid');
  } catch {
    sendHtml(res, 400, messagePage('Bad request', 'The request target is not a valid URL.'));
    return;
  }
  const body = await readBody(req);
  const api = isApiPath(url.pathname);
  if (api) routes.log(loggedRequest(req, url, body.text, routes.authorization));
  const fault = routes.faults.take(url.pathname);
  if (fault && (await applyFault(fault, req, res, routes.signal))) return;

  if (body.tooLarge) {
    if (api) sendJson(res, 413, { result: { status: 413, message: 'Payload Too Large' } });
    else sendHtml(res, 413, messagePage('Payload too large', 'Request bodies are limited to 1 MiB.'));
    return;
  }
  if (api) {
    const context = {
      state: routes.state,
      authorization: routes.authorization,
      generateAnswer: routes.generateAnswer,
      verifyLimiter: routes.verifyLimiter,
    };
    handleApiRequest(context, req, res, url, body.text);
    return;
  }
  const checkout = { state: routes.state, settle: routes.settle };
  if (await handleCheckoutRequest(checkout, req, res, url)) return;
  if (await handleControlRequest(checkout, req, res, url)) return;
  handlePage(req, res, routes.baseUrl, routes.state.list());
}
