/**
 * The logging hook of the core. Nest's `Logger` satisfies it; so does `console`. Messages never
 * contain the private key or the webhook secret.
 */
export interface PaymentsLogger {
  /** Routine events (a duplicate webhook, a retry). */
  log(message: string): void;
  /** Something went wrong but was handled (a handler failed, a claim was lost). */
  warn(message: string): void;
  /** Something needs attention (the store is unreachable). */
  error(message: string): void;
}

/** Default logger of the framework-free core: warnings and errors to stderr, routine lines dropped. */
export const defaultPaymentsLogger: PaymentsLogger = {
  log: () => undefined,
  warn: (message) => process.stderr.write(`[nestjs-payments] WARN ${message}\n`),
  error: (message) => process.stderr.write(`[nestjs-payments] ERROR ${message}\n`),
};
