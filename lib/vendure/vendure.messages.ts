import { MemoryPaymentsStore, type PaymentsStore } from '../core/store/index.js';

/** What {@link plainVendureMessage} needs of a Vendure `RequestContext`: its translation. */
export interface Translating {
  /** Vendure's `ctx.translate`: the request's language, or the key itself without a request. */
  translate(key: string, variables?: Record<string, string | number>): string;
}

/** Vendure's i18n keys (`message.cannot-transition-to-payment-without-customer`). */
const I18N_KEY = /^(message|error|errorResult)\.[\w-]+$/;

/**
 * The plain words of an error Vendure threw: Vendure's state machine throws its i18n key
 * (`message.cannot-transition-to-payment-without-customer`), which only its GraphQL layer
 * translates, and only when the key is the whole message. Translated in the request's language
 * when the context can; else the key's own words (`cannot transition to payment without customer`).
 * Other messages are kept as they are.
 * @param ctx the request's context
 * @param error what Vendure threw (an `I18nError` carries `variables`)
 */
export function plainVendureMessage(ctx: Translating, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (!I18N_KEY.test(message)) return message;
  const variables = (error as { variables?: Record<string, string | number> }).variables;
  let translated: string;
  try {
    translated = ctx.translate(message, variables);
  } catch {
    translated = message;
  }
  if (translated && translated !== message && !translated.startsWith('Translation format error')) return translated;
  return message.slice(message.indexOf('.') + 1).replace(/-/g, ' ');
}

/**
 * The warning the plugin logs at start when it runs in production (`NODE_ENV=production`) on the
 * in-memory store (no `store` option, or a `MemoryPaymentsStore`), or undefined. That store lives
 * in one process: a restart forgets every payment still open (a customer who closed the tab,
 * whose webhook comes after the restart, never gets an order), and each Vendure process (server,
 * worker, instances) knows only its own payments.
 * @param store the plugin's `store` option
 * @param nodeEnv `process.env.NODE_ENV`
 */
export function memoryStoreWarning(store: PaymentsStore | undefined, nodeEnv: string | undefined): string | undefined {
  if (nodeEnv !== 'production') return undefined;
  if (store !== undefined && !(store instanceof MemoryPaymentsStore)) return undefined;
  return (
    'nestjs-payments: NODE_ENV is production and the plugin keeps its payments in the in-memory store: ' +
    'a restart forgets every payment still open (a webhook after it never settles its order) and each ' +
    'Vendure process knows only its own. Give NestjsPaymentsPlugin.init() a shared store: ' +
    "store: new PostgresPaymentsStore(...) (nestjs-payments/postgres, e.g. on Vendure's own database) " +
    'or new RedisPaymentsStore(...) (nestjs-payments/redis); docs/vendure.md, "Several Vendure instances".'
  );
}
