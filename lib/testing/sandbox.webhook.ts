/**
 * Webhook delivery of payment confirmations. The spec shows no payload, timing, retries or
 * signing, so the sandbox chooses (and documents) them:
 *
 * - `POST` to exactly the payment's `webhook` URL, query string untouched (the plugin puts its
 *   signed token there), `Content-Type: application/json`, no signature header.
 * - Body: `{"payment_id", "status": "completed" | "failed", "amount": "<millimes>",
 *   "developer_tracking_id"}` (the last only when the payment has one).
 * - Sent synchronously with the customer's click: the checkout page redirects only once
 *   delivery is over, so a test that follows the redirect sees the webhook already handled.
 * - Retried on a non-2xx answer or a network error, up to `attempts` in total, waiting 100 ms,
 *   300 ms, then three times longer each time.
 */
import http from 'node:http';
import https from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxDelivery, SandboxPayment, SandboxWebhookOutcome } from './sandbox.types.js';

/** Settings of the deliverer. */
export interface WebhookSettings {
  /** Total attempts per confirmation. */
  attempts: number;
  /** Timeout of one attempt, in ms. */
  timeoutMs: number;
  /** Aborted when the sandbox closes: cancels in-flight requests and backoff waits. */
  signal: AbortSignal;
  /** Receives every attempt, for the sandbox's `deliveries` log. */
  log: (delivery: SandboxDelivery) => void;
}

/** Wait before attempt `n + 1` (n from 1): 100 ms, 300 ms, 900 ms... */
export function backoffMs(attempt: number): number {
  return 100 * 3 ** (attempt - 1);
}

/** The JSON body the sandbox posts to confirm a paid payment (declines are not delivered). */
export function webhookPayload(payment: SandboxPayment): string {
  const body: Record<string, string> = {
    payment_id: payment.paymentId,
    status: 'completed',
    amount: payment.amount,
  };
  if (payment.developerTrackingId !== undefined) body.developer_tracking_id = payment.developerTrackingId;
  return JSON.stringify(body);
}

type AttemptResult = { status: number } | { error: string };

function postOnce(url: string, payload: string, timeoutMs: number, signal: AbortSignal): Promise<AttemptResult> {
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      resolve({ error: 'invalid webhook URL' });
      return;
    }
    const transport = target.protocol === 'https:' ? https : http;
    // agent: false gives each attempt its own socket, closed afterwards, so no pooled
    // keep-alive socket outlives the sandbox (and keeps a test runner alive).
    const req = transport.request(target, {
      method: 'POST',
      agent: false,
      signal,
      headers: {
        'Content-Type': 'application/json',
        'Content-Length': String(Buffer.byteLength(payload)),
        'User-Agent': 'nestjs-payments-sandbox',
      },
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0 }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0 }));
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      resolve({ error: signal.aborted ? 'sandbox closed' : error.code ? `${error.code}: ${error.message}` : error.message });
    });
    req.end(payload);
  });
}

/** Delivers the confirmation of `payment` to its webhook URL, with retries. */
export async function deliverWebhook(payment: SandboxPayment, url: string, settings: WebhookSettings): Promise<SandboxWebhookOutcome> {
  const payload = webhookPayload(payment);
  let last: AttemptResult = { error: 'not attempted' };
  let attempt = 0;
  while (attempt < settings.attempts && !settings.signal.aborted) {
    attempt += 1;
    last = await postOnce(url, payload, settings.timeoutMs, settings.signal);
    settings.log(Object.freeze({ paymentId: payment.paymentId, url, attempt, ...last, payload }));
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
  return 'status' in last ? { status: last.status, attempts: attempt, delivered: false } : { status: 0, attempts: attempt, delivered: false, error: last.error };
}
