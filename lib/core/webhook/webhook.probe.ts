import { WebhookTokenSigner } from './webhook.token.js';

/**
 * The URL of a set-up probe: `publicUrl` with a probe token signed by `secret` as its last path
 * segment, as a payment's webhook URL has its token. Sent by POST (any body), it reaches the
 * plugin's webhook route like a delivery, through the host's proxies, and the route answers 200
 * `{ "received": true, "probe": true }` without a store lookup, a call to the service or any
 * handler. `npx nestjs-payments doctor --probe` sends one; a 404 there means the public URL does
 * not route to the app.
 *
 * @param publicUrl the `webhook.publicUrl` option (`PAYMENTS_WEBHOOK_PUBLIC_URL`)
 * @param secret the `webhook.secret` option, the one the app runs with
 * @param ttlMs how long the probe stays valid, in ms; default 5 minutes
 */
export function webhookProbeUrl(publicUrl: string, secret: string, ttlMs?: number): string {
  return WebhookTokenSigner.urlWithToken(publicUrl, new WebhookTokenSigner(secret).issueProbe(ttlMs));
}
