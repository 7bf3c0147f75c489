import { hash } from 'node:crypto';

/**
 * Whose token a signed delivery carries, as far as registrations go: this registration's
 * (`own`), another registration's of the app (`other`: its publicUrl points at this route), or
 * a token minted before tokens named their registration (`legacy`).
 */
export type TokenRegistration = 'own' | 'other' | 'legacy';

/**
 * Another registration of the same app, as a route sees it: how it is named in a warning, and
 * whether it minted a token (checked with its own secrets, which the route never sees).
 */
export interface OtherRegistration {
  /** How it is named in a warning, e.g. `registration 'outlet'`; never a secret. */
  readonly label: string;
  /** Whether it minted `token` (its signature and registration tag; expired or not). */
  minted(token: string): boolean;
}

/** A route's registration and the app's others, as its front end (Nest module, Express router) knows them. */
export interface RegistrationContext {
  /** How this registration is named in a warning. */
  readonly label: string;
  /** The path its route is served at, when the front end knows it (else `/<webhook.path>`). */
  readonly route?: string;
  /** The app's other registrations (read at each misrouted or invalid token: routes may be added later). */
  readonly others: () => readonly OtherRegistration[];
}

/** What a route does with a validly signed token, by whose it is. */
export type TokenRegistrationVerdict = 'accept' | 'misrouted';

/**
 * The tag a registration puts in every token it mints: 6 base64url characters of a hash of its
 * name (the unnamed registration has one too), inside the signed part of the token. Two
 * registrations sharing a secret thus still refuse each other's tokens.
 * @param name the registration's name; undefined for the default one
 */
export function registrationTag(name: string | undefined): string {
  return hash('sha256', `nestjs-payments:registration:${name ?? ''}`, 'buffer')
    .subarray(0, 6)
    .toString('base64url')
    .slice(0, 6);
}

/**
 * The one rule for a validly signed token on a registration's route. A token of another
 * registration is never handled here (its payment would run under the wrong account, and run
 * again under its own). A legacy token names nobody: it is accepted only where it cannot be
 * another account's, an app with a single registration.
 * @param registration whose the token is
 * @param soleRegistration whether this registration is the app's only one
 */
export function tokenRegistrationVerdict(
  registration: TokenRegistration,
  soleRegistration: boolean,
): TokenRegistrationVerdict {
  switch (registration) {
    case 'own':
      return 'accept';
    case 'other':
      return 'misrouted';
    case 'legacy':
      return soleRegistration ? 'accept' : 'misrouted';
    default: {
      const never: never = registration;
      return never;
    }
  }
}
