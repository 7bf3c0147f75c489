import { createHash } from 'node:crypto';

/** Names of the payment method's handler arguments that carry its own merchant account. */
export const CREDENTIAL_ARGS = {
  publicKey: 'publicKey',
  privateKey: 'privateKey',
  webhookSecret: 'webhookSecret',
} as const;

/**
 * Which merchant account a payment method of the plugin's handler uses, from its handler
 * arguments (pure):
 * - `plugin`: neither key set: the plugin's options (`publicKey`, `privateKey`, `webhook.secret`);
 * - `own`: both keys set: its own account, and its own `webhookSecret` when set (else the plugin's);
 * - `incomplete`: one key without the other: refused when used, naming what is missing (never a value).
 */
export type MethodAccount =
  | { readonly kind: 'plugin' }
  | {
      readonly kind: 'own';
      readonly publicKey: string;
      readonly privateKey: string;
      readonly webhookSecret?: string;
      /** A hash of the three values, to tell when they change (never logged either). */
      readonly fingerprint: string;
    }
  | { readonly kind: 'incomplete'; readonly missing: 'publicKey' | 'privateKey' };

/** A handler argument's value, trimmed; empty (the Admin's blank field) is unset. */
function argValue(args: ReadonlyArray<{ name: string; value: string }>, name: string): string | undefined {
  const value = args.find((arg) => arg.name === name)?.value?.trim();
  return value ? value : undefined;
}

/**
 * The account of a payment method, from its handler arguments. Pure.
 * @param args the PaymentMethod's `handler.args`
 */
export function methodAccountOf(args: ReadonlyArray<{ name: string; value: string }>): MethodAccount {
  const publicKey = argValue(args, CREDENTIAL_ARGS.publicKey);
  const privateKey = argValue(args, CREDENTIAL_ARGS.privateKey);
  const webhookSecret = argValue(args, CREDENTIAL_ARGS.webhookSecret);
  if (publicKey === undefined && privateKey === undefined) return { kind: 'plugin' };
  if (publicKey === undefined) return { kind: 'incomplete', missing: 'publicKey' };
  if (privateKey === undefined) return { kind: 'incomplete', missing: 'privateKey' };
  const fingerprint = createHash('sha256')
    .update(`${publicKey}\0${privateKey}\0${webhookSecret ?? ''}`)
    .digest('hex');
  return { kind: 'own', publicKey, privateKey, ...(webhookSecret ? { webhookSecret } : {}), fingerprint };
}

/**
 * The registration name of a payment method's own account, in events and log lines (never a
 * secret): `method-<code>`, its characters kept to what a registration name allows. Pure.
 */
export function methodRegistration(methodCode: string): string {
  return `method-${methodCode.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
}
