/**
 * Webhook delivery of payment outcomes. The service's interface shows no payload, timing, retries or
 * signing; the public pages describe success and failure webhooks whose payload is still
 * undocumented, and public clients read `payment_id` (by GET or POST) and never trust the body's
 * status (docs/service-facts.md §2). So the sandbox chooses, and documents:
 *
 * - Sent for the outcomes `isWebhookStatus` names (paid, held, declined), not for expiry.
 * - `POST` (default): JSON body `{"payment_id":"…","status":"SUCCESS"}`, `Content-Type:
 *   application/json`, where `status` is the verify status of that moment. `GET`: no body,
 *   `payment_id` and `status` in the query.
 * - The payment id in the URL per `webhookPaymentIdInUrl` (`sandbox.url.ts` holds the rule).
 * - No signature header: the service shows none.
 * - Sent synchronously with the customer's click: the checkout page redirects only once delivery
 *   is over, so a test that follows the redirect sees the webhook already handled.
 * - Retried on a non-2xx answer or a network error, up to `attempts` in total, waiting 100 ms,
 *   300 ms, then three times longer each time.
 * - Sent only to loopback hosts and `allowedHosts` (`sandbox.exposure.ts`): another URL gets no
 *   request, and its delivery is recorded with an error saying why.
 */
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { urlWithoutToken, webhookHostAllowed } from './sandbox.exposure.js';
import type { SandboxVerifyStatus } from './sandbox.status.js';
import type {
  SandboxDelivery,
  SandboxWebhookFailure,
  SandboxWebhookMethod,
  SandboxWebhookOutcome,
} from './sandbox.types.js';
import { addQueryByMode, type QueryParams, type SandboxPaymentIdInUrl } from './sandbox.url.js';

/** Settings of the deliverer. */
export interface WebhookSettings {
  /** Total attempts per outcome. */
  attempts: number;
  /** Timeout of one attempt, in ms. */
  timeoutMs: number;
  /** HTTP method of the deliveries. */
  method: SandboxWebhookMethod;
  /** How the payment id goes into the URL. */
  paymentIdInUrl: SandboxPaymentIdInUrl;
  /** Aborted when the sandbox closes: cancels in-flight requests and backoff waits. */
  signal: AbortSignal;
  /** Receives every attempt, for the sandbox's `deliveries` log. */
  log: (delivery: SandboxDelivery) => void;
  /** Hosts besides loopback that webhooks may go to (`'*'`: any). */
  allowedHosts: readonly string[];
  /** Told of each delivery no attempt delivered. */
  onFailed?: (failure: SandboxWebhookFailure) => void;
}

/** Wait before attempt `n + 1` (n from 1): 100 ms, 300 ms, 900 ms... */
export function backoffMs(attempt: number): number {
  return 100 * 3 ** (attempt - 1);
}

/** The request of one delivery: where, how, and with which body. */
export interface WebhookRequest {
  /** Target URL, query added. */
  readonly url: string;
  /** HTTP method. */
  readonly method: SandboxWebhookMethod;
  /** JSON body for POST; `''` for GET. */
  readonly payload: string;
}

/** Builds the delivery of `status` for `paymentId` to the payment's `webhook` URL. */
export function webhookRequest(
  webhook: string,
  paymentId: string,
  status: SandboxVerifyStatus,
  settings: Pick<WebhookSettings, 'method' | 'paymentIdInUrl'>,
): WebhookRequest {
  if (settings.method === 'GET') {
    const params: QueryParams = [
      ['payment_id', paymentId],
      ['status', status],
    ];
    return { url: addQueryByMode(webhook, params, settings.paymentIdInUrl), method: 'GET', payload: '' };
  }
  return {
    url: addQueryByMode(webhook, [['payment_id', paymentId]], settings.paymentIdInUrl),
    method: 'POST',
    payload: JSON.stringify({ payment_id: paymentId, status }),
  };
}

type AttemptResult = { status: number } | { error: string };

function sendOnce(request: WebhookRequest, timeoutMs: number, signal: AbortSignal): Promise<AttemptResult> {
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(request.url);
    } catch {
      resolve({ error: 'invalid webhook URL' });
      return;
    }
    const transport = target.protocol === 'https:' ? https : http;
    const headers: Record<string, string> = { 'User-Agent': 'nestjs-payments-sandbox' };
    if (request.method === 'POST') {
      headers['Content-Type'] = 'application/json';
      headers['Content-Length'] = String(Buffer.byteLength(request.payload));
    }
    // agent: false gives each attempt its own socket, closed afterwards, so no pooled
    // keep-alive socket outlives the sandbox (and keeps a test runner alive).
    const req = transport.request(target, { method: request.method, agent: false, signal, headers });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0 }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      resolve({
        error: signal.aborted ? 'sandbox closed' : error.code ? `${error.code}: ${error.message}` : error.message,
      });
    });
    req.end(request.method === 'POST' ? request.payload : undefined);
  });
}

/** Delivers `status` of `paymentId` to `webhook`, with retries. */
export async function deliverWebhook(
  webhook: string,
  paymentId: string,
  status: SandboxVerifyStatus,
  settings: WebhookSettings,
): Promise<SandboxWebhookOutcome> {
  const request = webhookRequest(webhook, paymentId, status, settings);
  if (!webhookHostAllowed(request.url, settings.allowedHosts)) {
    const error =
      'not sent: the host is not a loopback one; allow it with the webhookAllowedHosts option (CLI: --webhook-allow-host)';
    settings.log(
      Object.freeze({
        paymentId,
        paymentStatus: status,
        method: request.method,
        url: request.url,
        attempt: 1,
        error,
        payload: request.payload,
      }),
    );
    settings.onFailed?.({ paymentId, url: urlWithoutToken(request.url), attempts: 0, error });
    return { status: 0, attempts: 0, delivered: false, error };
  }
  let last: AttemptResult = { error: 'not attempted' };
  let attempt = 0;
  while (attempt < settings.attempts && !settings.signal.aborted) {
    attempt += 1;
    last = await sendOnce(request, settings.timeoutMs, settings.signal);
    settings.log(
      Object.freeze({
        paymentId,
        paymentStatus: status,
        method: request.method,
        url: request.url,
        attempt,
        ...last,
        payload: request.payload,
      }),
    );
    if ('status' in last && last.status >= 200 && last.status < 300) {
      return { status: last.status, attempts: attempt, delivered: true };
    }
    if (attempt < settings.attempts) {
      try {
        await sleep(backoffMs(attempt), undefined, { signal: settings.signal });
      } catch {
        break;
      }
    }
  }
  if (!('status' in last) && settings.signal.aborted) last = { error: 'sandbox closed' };
  settings.onFailed?.({ paymentId, url: urlWithoutToken(request.url), attempts: attempt, ...last });
  return 'status' in last
    ? { status: last.status, attempts: attempt, delivered: false }
    : { status: 0, attempts: attempt, delivered: false, error: last.error };
}
