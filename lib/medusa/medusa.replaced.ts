import { MemoryPaymentsStore, type PaymentsStore } from '../core/store/index.js';

/** The provider's name in its messages, before Medusa's id of it is known. */
const PROVIDER = 'nestjs-payments/medusa';

/** How long a replaced payment is remembered: past any checkout session (the service's default is 20 min). */
export const REPLACED_TTL_MS = 7 * 24 * 60 * 60 * 1000;

/** The store key under which a replaced payment is remembered (never a signed webhook token: those are random). */
export function replacedKey(paymentId: string): string {
  return `medusa-replaced:${paymentId}`;
}

/** The store key of the cart of a replaced payment, when the storefront named it (`data.cart_id`). */
export function replacedCartKey(paymentId: string): string {
  return `medusa-replaced-cart:${paymentId}`;
}

/**
 * The store key noting that a replaced payment's hold, placed after its session went, was
 * released: a redelivery of its webhook asks the service nothing again.
 */
export function replacedReleasedKey(paymentId: string): string {
  return `medusa-replaced-released:${paymentId}`;
}

/** What is known of a replaced payment: its session, and its cart when the storefront named it. */
export interface ReplacedPayment {
  /** The service's payment id. */
  paymentId: string;
  /** Its amount in millimes. */
  amount: string;
  /** The Medusa payment session it belonged to. */
  sessionId?: string;
  /** The cart, when the session's data named it (`cart_id`). */
  cartId?: string;
}

/**
 * The error logged when a payment whose session was replaced or deleted (another tab, a cart
 * changed after the link) turns out paid: the customer was charged and this payment makes no
 * order (Medusa no longer has its session, or the session now asks for another payment).
 * @param replaced the payment
 * @param dinars its amount, in dinars
 * @param when `'now'` (found paid when its session was replaced) or `'later'` (paid afterwards)
 */
export function replacedPaidMessage(replaced: ReplacedPayment, dinars: string, when: 'now' | 'later'): string {
  return (
    `payment ${replaced.paymentId} (${dinars} TND, ${whereOf(replaced)}) was paid ` +
    `${when === 'now' ? 'before' : 'after'} its payment session was replaced or deleted: the customer was charged and ` +
    `no order comes of this payment (the cart's order, if any, is paid by another one); refund it (refund_payment) or contact the customer`
  );
}

/**
 * The line logged when a pre-authorization whose session was replaced or deleted turns out held
 * afterwards (the release when its session went found nothing held yet): its hold released
 * (a warning: nothing was charged), or not (an error: the customer's money is held for nothing).
 * @param replaced the payment
 * @param dinars its amount, in dinars
 * @param failure why the release failed, when it did
 */
export function replacedHoldMessage(replaced: ReplacedPayment, dinars: string, failure?: string): string {
  return (
    `payment ${replaced.paymentId} (${dinars} TND, ${whereOf(replaced)}) was pre-authorized after its payment ` +
    `session was replaced or deleted: ${
      failure === undefined
        ? 'its hold was released (cancel_payment); no order comes of this payment'
        : `its hold could not be released (${failure}): release it (cancel_payment) or contact the customer`
    }`
  );
}

/** Where a replaced payment belonged, as its messages name it. */
function whereOf(replaced: ReplacedPayment): string {
  const where = [
    replaced.cartId ? `cart ${replaced.cartId}` : undefined,
    replaced.sessionId ? `payment session ${replaced.sessionId}` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  return where || 'no session known';
}

/**
 * The id Medusa gives a provider (`pp_nestjs-payments_<id>`), read from its `webhookUrl`
 * (`.../hooks/payment/nestjs-payments_<id>`): Medusa does not tell a provider its id.
 * @param webhookUrl the provider's `webhookUrl` option
 */
export function providerIdOf(webhookUrl: unknown): string | undefined {
  if (typeof webhookUrl !== 'string') return undefined;
  const match = /\/hooks\/payment\/(nestjs-payments_[\w-]+)\/?(?:[?#].*)?$/.exec(webhookUrl);
  return match ? `pp_${match[1]}` : undefined;
}

/**
 * How a provider's configuration error names the provider: Medusa's id when the `webhookUrl`
 * shows it, else the resolve path and the public key (never the private key).
 * @param options the provider's options
 */
export function providerLabel(options: Record<string, unknown>): string {
  const id = providerIdOf(options.webhookUrl);
  if (id) return `${PROVIDER} provider ${id}`;
  const key = typeof options.publicKey === 'string' && options.publicKey !== '' ? options.publicKey : undefined;
  return `${PROVIDER} provider (${key ? `publicKey ${key.slice(0, 24)}, ` : ''}id pp_nestjs-payments_<id> in medusa-config)`;
}

/**
 * The warning the provider logs when built in production (`NODE_ENV=production`) on the in-memory
 * store (no `store` option, or a `MemoryPaymentsStore`), or undefined: that store lives in one
 * process, so a restart forgets every payment still open, and a webhook coming after it (a
 * customer who closed the tab) is ignored: the cart never becomes an order.
 * @param store the provider's `store` option
 * @param nodeEnv `process.env.NODE_ENV`
 */
export function medusaMemoryStoreWarning(
  store: PaymentsStore | undefined,
  nodeEnv: string | undefined,
): string | undefined {
  if (nodeEnv !== 'production') return undefined;
  if (store !== undefined && !(store instanceof MemoryPaymentsStore)) return undefined;
  return (
    'NODE_ENV is production and the provider keeps its payments in the in-memory store: a restart forgets every ' +
    'payment still open (a webhook after it is ignored: a customer who closed the tab gets no order), and each ' +
    "Medusa process knows only its own. Set the provider's `store` option to a shared store: " +
    "new PostgresPaymentsStore(process.env.DATABASE_URL) (nestjs-payments/postgres, on Medusa's own database) " +
    'or new RedisPaymentsStore(...) (nestjs-payments/redis); docs/medusa.md, "Configuration".'
  );
}
