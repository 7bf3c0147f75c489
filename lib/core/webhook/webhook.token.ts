import { SYSTEM_CLOCK, type Clock } from '../time/index.js';
import { createHmac, createSecretKey, hash, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

/** Name of the query parameter that may carry the plugin's webhook token (the path is the default place). */
export const WEBHOOK_TOKEN_PARAM = 'webhook_token';

const DOMAIN = 'nestjs-payments:webhook:v2:';
// Probe tokens are signed under their own domain, so no probe can pass for a payment token (or
// the reverse), whatever their bodies.
const PROBE_DOMAIN = 'nestjs-payments:webhook-probe:v1:';
const PROBE_FORMAT = /^probe\.([0-9a-z]{1,11})\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22})$/;
// Only characters that are never escaped in a URL path or query: the service can append to the
// URL however it likes without touching the token.
// The registration tag (6 characters) is absent from tokens minted before tokens named their
// registration: those still verify where they cannot be another account's (tokenRegistrationVerdict).
const TOKEN_FORMAT =
  /^([A-Za-z0-9_-]{16})\.([0-9a-z]{1,11})\.([0-9]{1,15})\.([A-Za-z0-9_-]{0,16})(?:\.([A-Za-z0-9_-]{6}))?\.([A-Za-z0-9_-]{22})$/;

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

/** What a valid token says: signed by the plugin when it generated the payment. */
export interface WebhookTokenClaims {
  /** The token's random id, under which the store binds it to the payment. */
  nonce: string;
  /** Epoch ms after which the token is refused. */
  expiresAt: number;
  /** The amount in millimes the payment was generated for. */
  amount: string;
  /** A hash of the tracking id it was generated with (empty when none). */
  trackingHash: string;
}

/** What {@link WebhookTokenSigner.check} found: a token signed by one of the secrets, and whose it is; or nothing valid. */
export type WebhookTokenCheck =
  { kind: 'valid'; claims: WebhookTokenClaims; registration: TokenRegistration } | { kind: 'invalid' };

/** Options of {@link WebhookTokenSigner} beside its secret. */
export interface WebhookTokenSignerOptions {
  /** Secrets of before a rotation: tokens they signed still verify until they expire; none signs. Default none. */
  previousSecrets?: readonly string[];
  /** The registration minting the tokens (its name); undefined for the default one. */
  registration?: string;
  /** What expiry times are read from. Default the system clock. */
  clock?: Clock;
}

/**
 * Issues and checks the tokens carried by signed webhook URLs.
 *
 * A token is `<nonce>.<expiry>.<amount>.<tracking hash>.<registration tag>.<HMAC-SHA256/128>`
 * (base64url and digits, at most 86 characters).
 * The payment id is not known when the URL must be sent, so the token carries what the plugin
 * must check once it is: the amount and the tracking id it sent. Thus a delivery is checked
 * even when the store forgot the token (a restart with the in-memory store, an eviction): the
 * service's verify answer must then match what the token was signed for. The HMAC lets forged
 * tokens be refused before any store lookup or call to the service.
 */
export class WebhookTokenSigner {
  readonly #secret: KeyObject;
  /** The current secret first, then the previous ones: a token verifies under any of them. */
  readonly #secrets: readonly KeyObject[];
  readonly #tag: string;
  private readonly clock: Clock;
  // Nonces are cut from one block of random bytes per 512 payments rather than a randomBytes(12)
  // call each, the larger part of signing's cost otherwise (docs/performance.md). Per signer, never shared.
  #pool = Buffer.alloc(0);
  #used = 0;

  /**
   * @param secret the webhook secret (validated elsewhere: at least 32 characters); signs every new token
   * @param options previous secrets still accepted, the registration minting the tokens, the clock
   */
  constructor(secret: string, options: WebhookTokenSignerOptions = {}) {
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.#secret = createSecretKey(Buffer.from(secret, 'utf8'));
    this.#secrets = [
      this.#secret,
      ...(options.previousSecrets ?? []).map((s) => createSecretKey(Buffer.from(s, 'utf8'))),
    ];
    this.#tag = registrationTag(options.registration);
  }

  /**
   * A new token for a payment about to be generated.
   * @param amount millimes, digits
   * @param trackingId the tracking id sent with it, if any
   * @param ttlMs how long the token stays valid
   */
  issue(amount: string, trackingId: string | undefined, ttlMs: number): { token: string; claims: WebhookTokenClaims } {
    const nonce = this.#nonce();
    const expiresAt = this.clock.now() + ttlMs;
    // Hashed once, not once for the token and once for its claims (docs/performance.md).
    const hashed = trackingHash(trackingId);
    const body = `${nonce}.${Math.ceil(expiresAt / 1000).toString(36)}.${amount}.${hashed}.${this.#tag}`;
    return {
      token: `${body}.${this.#sign(body)}`,
      claims: { nonce, expiresAt: Math.ceil(expiresAt / 1000) * 1000, amount, trackingHash: hashed },
    };
  }

  /**
   * Checks a token's signature (in constant time, under the secret and each previous one) and
   * expiry, and says whose registration minted it.
   */
  check(token: unknown, now = this.clock.now()): WebhookTokenCheck {
    if (typeof token !== 'string') return { kind: 'invalid' };
    const match = TOKEN_FORMAT.exec(token);
    if (!match) return { kind: 'invalid' };
    const body = token.slice(0, token.lastIndexOf('.'));
    const actual = Buffer.from(match[6], 'utf8');
    if (!this.#secrets.some((key) => safeEqualBuffers(Buffer.from(this.#sign(body, DOMAIN, key), 'utf8'), actual)))
      return { kind: 'invalid' };
    const expiresAt = parseInt(match[2], 36) * 1000;
    if (!(expiresAt > now)) return { kind: 'invalid' };
    const tag = match[5];
    const registration: TokenRegistration = tag === undefined ? 'legacy' : tag === this.#tag ? 'own' : 'other';
    return {
      kind: 'valid',
      claims: { nonce: match[1], expiresAt, amount: match[3], trackingHash: match[4] },
      registration,
    };
  }

  /**
   * Whether this signer minted a token: its signature holds under one of the secrets and it names
   * this registration (expired or not). Lets a route with other secrets tell another registration's
   * misrouted token from a forged one, without ever seeing those secrets.
   */
  minted(token: unknown): boolean {
    if (typeof token !== 'string') return false;
    const match = TOKEN_FORMAT.exec(token);
    if (!match || match[5] !== this.#tag) return false;
    const body = token.slice(0, token.lastIndexOf('.'));
    const actual = Buffer.from(match[6], 'utf8');
    return this.#secrets.some((key) => safeEqualBuffers(Buffer.from(this.#sign(body, DOMAIN, key), 'utf8'), actual));
  }

  /**
   * Checks a token's signature and expiry, as {@link check}.
   * @returns its claims when valid and not another registration's, otherwise undefined
   */
  verify(token: unknown, now = this.clock.now()): WebhookTokenClaims | undefined {
    const checked = this.check(token, now);
    return checked.kind === 'valid' && checked.registration !== 'other' ? checked.claims : undefined;
  }

  /**
   * A probe token: sent as the path token, the webhook route answers it 200 `{ probe: true }`
   * without a store lookup, a verify call or handlers, so a set-up check (`nestjs-payments doctor
   * --probe`) can tell that the public URL routes to the plugin. It names no payment.
   * `probe.<expiry>.<nonce>.<HMAC-SHA256/128>`.
   * @param ttlMs how long it stays valid; default 5 minutes
   */
  issueProbe(ttlMs = 300_000): string {
    const body = `probe.${Math.ceil((this.clock.now() + ttlMs) / 1000).toString(36)}.${randomBytes(12).toString('base64url')}`;
    return `${body}.${this.#sign(body, PROBE_DOMAIN)}`;
  }

  /** Whether `token` is an unexpired probe token signed with this secret (checked in constant time). */
  verifyProbe(token: unknown, now = this.clock.now()): boolean {
    if (typeof token !== 'string') return false;
    const match = PROBE_FORMAT.exec(token);
    if (!match) return false;
    const body = token.slice(0, token.lastIndexOf('.'));
    const actual = Buffer.from(match[3], 'utf8');
    return (
      this.#secrets.some((key) => safeEqualBuffers(Buffer.from(this.#sign(body, PROBE_DOMAIN, key), 'utf8'), actual)) &&
      parseInt(match[1], 36) * 1000 > now
    );
  }

  /**
   * The webhook URL for a token: the token as the last path segment of `publicUrl`, keeping its
   * query. In the path, it survives a service that appends `?payment_id=` naively.
   */
  static urlWithToken(publicUrl: string, token: string): string {
    const url = new URL(publicUrl);
    url.pathname = `${url.pathname.replace(/\/+$/, '')}/${token}`;
    return url.toString();
  }

  /**
   * {@link WebhookTokenSigner.urlWithToken} for one `publicUrl`, parsed once rather than per
   * payment: the URL as `urlWithToken` builds it around a token, then each token put in its place.
   * A token only holds characters a URL path keeps as they are and is never a dot segment, so the
   * rest of the URL does not depend on it; a public URL for which two probes disagree (none known)
   * is built by `urlWithToken` every time.
   * @param publicUrl the webhook's public URL
   */
  static urlMaker(publicUrl: string): (token: string) => string {
    const one = WebhookTokenSigner.urlWithToken(publicUrl, 'a');
    const two = WebhookTokenSigner.urlWithToken(publicUrl, 'bb');
    let at = 0;
    while (at < one.length && one[at] === two[at]) at++;
    const head = one.slice(0, at);
    const tail = one.slice(at + 1);
    if (two !== `${head}bb${tail}`) return (token) => WebhookTokenSigner.urlWithToken(publicUrl, token);
    return (token) => head + token + tail;
  }

  #nonce(): string {
    if (this.#used + 12 > this.#pool.length) {
      this.#pool = randomBytes(12 * 512);
      this.#used = 0;
    }
    this.#used += 12;
    return this.#pool.subarray(this.#used - 12, this.#used).toString('base64url');
  }

  // HMAC-SHA256 truncated to 128 bits (RFC 2104 §5 allows truncation to half the output): the
  // token must stay under Fastify's default 100-character limit on a path parameter.
  #sign(body: string, domain = DOMAIN, key = this.#secret): string {
    return createHmac('sha256', key)
      .update(domain + body)
      .digest()
      .subarray(0, 16)
      .toString('base64url');
  }
}

/** The hash of a tracking id a token carries: 12 bytes of SHA-256, or empty when there is none. */
export function trackingHash(trackingId: string | undefined): string {
  return trackingId === undefined
    ? ''
    : hash('sha256', `tracking:${trackingId}`, 'buffer').subarray(0, 12).toString('base64url');
}

function safeEqualBuffers(expected: Buffer, actual: Buffer): boolean {
  return expected.length === actual.length && timingSafeEqual(expected, actual);
}

/** Compares two strings in constant time (hashing first, so lengths leak nothing either). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(hash('sha256', a, 'buffer'), hash('sha256', b, 'buffer'));
}
