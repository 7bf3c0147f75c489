import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { PaymentsClient } from '../core/client/index.js';
import { describe, type PaymentsLogger } from '../core/common/index.js';
import { DESK_RESULTS, type DeskAction, DeskActions, type DeskResult } from './desk.actions.js';
import { chartsPage, chartWindow, readCharts } from './desk.charts.js';
import { DeskData } from './desk.data.js';
import { DeskHistory } from './desk.history.js';
import { DeskReviews } from './desk.reviews.js';
import {
  type DeskAuthorization,
  isPrincipal,
  type PaymentsDeskBaseOptions,
  principalOf,
  type ResolvedDeskOptions,
  resolveDeskOptions,
} from './desk.options.js';
import {
  customerPage,
  DESK_CSP,
  type DeskPageContext,
  messagePage,
  overviewPage,
  paymentPage,
  searchPage,
} from './desk.views.js';

/**
 * The shape of a signed webhook token (`<nonce>.<expiry>.<amount>.<tracking hash>.<tag>.<HMAC>`,
 * base64url and digits), and of a probe's: cut out of whatever a page shows, wherever it came from
 * (a customer can type one into an order note, a handler can throw one in its message).
 */
const WEBHOOK_TOKEN =
  /[A-Za-z0-9_-]{4,}\.[0-9a-z]{1,13}\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]*\.[A-Za-z0-9_-]{16,}/g;
const PROBE_TOKEN = /probe\.[0-9a-z]{1,13}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}/g;

/**
 * The nonce of a webhook token found in `query` (the token, or a webhook URL holding it), or the
 * query itself when `nonceAlone` and it is shaped like one: the id the store binds the token by.
 */
export function tokenNonceOf(query: string, nonceAlone: boolean): string | undefined {
  const token = new RegExp(WEBHOOK_TOKEN.source).exec(query)?.[0];
  if (token !== undefined) return token.split('.')[0];
  return nonceAlone && /^[A-Za-z0-9_-]{4,100}$/.test(query) ? query : undefined;
}

/** What replaces a token or a secret in a page. */
export const CUT = '[redacted]';

/**
 * A text as a page may show it: the client's secrets cut out by `secrets` (the private key and
 * the webhook secrets, in every encoding the core searches answers for), then every webhook token.
 */
export function cleanText(text: string, secrets: (text: string) => string): string {
  return secrets(text).replace(PROBE_TOKEN, CUT).replace(WEBHOOK_TOKEN, CUT);
}

/** A copy of a plain value (records, lists) with every string in it cleaned by `clean`. */
export function cleanDeep<T>(value: T, clean: (text: string) => string): T {
  if (typeof value === 'string') return clean(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => cleanDeep(v, clean)) as T;
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = cleanDeep(v, clean);
    return out as T;
  }
  return value;
}

/**
 * The desk's form tokens (CSRF): `<issued, base 36>.<HMAC-SHA256 of the principal and the issue
 * time>`, under a key held by this desk (never module state). A token is good for one principal
 * and `ttlMs`: a page of another site cannot read one (the desk's pages are same-origin), and a
 * token taken from one person's page is refused for anyone else.
 */
export class DeskFormTokens {
  readonly #key: Buffer;
  readonly #ttlMs: number;

  /**
   * @param key the HMAC key (the desk's `formKey`, or random bytes)
   * @param ttlMs how long a token is accepted after it was issued
   */
  constructor(key: Buffer, ttlMs: number) {
    this.#key = key;
    this.#ttlMs = ttlMs;
  }

  /** A token for `principalId`, issued at `now` (epoch ms). */
  issue(principalId: string, now: number): string {
    const issued = Math.floor(now / 1000).toString(36);
    return `${issued}.${this.#sign(principalId, issued)}`;
  }

  /** Whether `token` was issued by this desk for `principalId` and has not expired at `now`. */
  check(token: unknown, principalId: string, now: number): boolean {
    if (typeof token !== 'string' || token.length > 100) return false;
    const [issued, mac, extra] = token.split('.');
    if (issued === undefined || mac === undefined || extra !== undefined || !/^[0-9a-z]{1,10}$/.test(issued))
      return false;
    const at = parseInt(issued, 36) * 1000;
    if (!(at <= now + 60_000 && now - at <= this.#ttlMs)) return false;
    const expected = Buffer.from(this.#sign(principalId, issued));
    const given = Buffer.from(mac);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  /** Shows nothing of the key. */
  toJSON(): Record<string, never> {
    return {};
  }

  #sign(principalId: string, issued: string): string {
    return createHmac('sha256', this.#key).update(`desk-form\n${issued}\n${principalId}`).digest('base64url');
  }
}

/** One request to the desk, as the Express and Nest front ends read it. */
export interface DeskRequest {
  /** `GET`, `POST`, ... */
  method: string;
  /** The path below the desk's mount point, decoded per segment by the desk: `/`, `/search`, `/payments/<id>`. */
  path: string;
  /** The query string's values. */
  query: URLSearchParams;
  /** A POST's form fields (`application/x-www-form-urlencoded`), when it has any. */
  form: Readonly<Record<string, unknown>> | undefined;
  /** A request header's value (lower-case name). */
  header(name: string): string | undefined;
  /** The desk's mount path as the browser sees it, without a trailing slash (`''` at the root). */
  base: string;
}

/** What the desk answers. */
export interface DeskResponse {
  /** The HTTP status. */
  status: number;
  /** The headers to set. */
  headers: Record<string, string>;
  /** The HTML (empty for a redirect). */
  body: string;
}

/** The headers of every answer: nothing cached, framed, sniffed or referred. */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': DESK_CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

const ACTIONS: ReadonlySet<string> = new Set<DeskAction>(['run-handlers', 'refund', 'review']);

/**
 * The desk itself, framework-free: routes a request that the host has authorized, reads the
 * store, runs the actions, and renders the pages. Every value shown is cleaned of the client's
 * secrets and of webhook tokens, then escaped. The Express handler and the Nest controller are
 * thin front ends over it.
 */
export class PaymentsDeskEngine {
  readonly #client: PaymentsClient;
  readonly #options: ResolvedDeskOptions;
  readonly #tokens: DeskFormTokens;
  readonly #data: DeskData;
  readonly #actions: DeskActions;
  readonly #now: () => number;

  /**
   * @param client the registration's client
   * @param options the desk's options
   * @param defaultLogger where actions are written when `options.logger` is not given
   * @param now the clock of form tokens; default `Date.now`
   */
  constructor(
    client: PaymentsClient,
    options: PaymentsDeskBaseOptions,
    defaultLogger: PaymentsLogger,
    now: () => number = Date.now,
  ) {
    this.#client = client;
    this.#options = resolveDeskOptions(options, randomBytes, defaultLogger);
    this.#tokens = new DeskFormTokens(this.#options.formKey, this.#options.formTtlMs);
    const reviews = new DeskReviews(client, this.#options.reviewRetentionMs, now);
    const history = new DeskHistory(client, this.#options.reviewRetentionMs, now);
    this.#data = new DeskData(client, this.#options.listSize, this.#options.scanLimit, reviews, history);
    this.#actions = new DeskActions(client, this.#options.logger, reviews, history);
    this.#now = now;
  }

  /**
   * Answers one request, given what the host's check said of it.
   * @param request the request
   * @param authorization the host's answer: a principal, `undefined`/`null` (401) or `false` (403)
   */
  async handle(request: DeskRequest, authorization: DeskAuthorization): Promise<DeskResponse> {
    if (authorization === undefined || authorization === null)
      return this.#page(401, messagePage('Sign in', 'Sign in to use the payments desk.'));
    if (authorization === false || !isPrincipal(authorization))
      return this.#page(
        403,
        messagePage('Not allowed', 'You are signed in, but not allowed to use the payments desk.'),
      );
    const principal = principalOf(authorization);
    const ctx: DeskPageContext = {
      base: request.base,
      who: this.#clean(principal.name),
      token: this.#tokens.issue(principal.id, this.#now()),
    };
    try {
      return await this.#route(request, principal, ctx);
    } catch (error) {
      this.#options.logger.warn(this.#clean(`desk: ${request.method} ${request.path} failed: ${describe(error)}`));
      return this.#page(
        500,
        messagePage('Not available', 'The store or the service did not answer: try again in a moment.', ctx),
      );
    }
  }

  async #route(request: DeskRequest, who: { id: string; name: string }, ctx: DeskPageContext): Promise<DeskResponse> {
    const segments = request.path.split('/').filter((s) => s !== '');
    let parts: string[];
    try {
      parts = segments.map((s) => decodeURIComponent(s));
    } catch {
      return this.#notFound(ctx);
    }
    const get = request.method === 'GET' || request.method === 'HEAD';
    if (parts.length === 0)
      return get
        ? this.#page(200, overviewPage(ctx, this.#cleaned(await this.#data.overview())))
        : this.#notAllowed(ctx);
    if (parts.length === 1 && parts[0] === 'search') return get ? this.#search(request, ctx) : this.#notAllowed(ctx);
    if (parts.length === 1 && parts[0] === 'charts') {
      if (!get) return this.#notAllowed(ctx);
      const data = await readCharts(this.#client, chartWindow(request.query.get('window')), this.#now());
      return this.#page(200, chartsPage(ctx, this.#cleaned(data)));
    }
    if (parts[0] !== 'payments' || parts.length < 2 || parts.length > 3) return this.#notFound(ctx);
    const paymentId = parts[1];
    if (parts.length === 2) {
      if (!get) return this.#notAllowed(ctx);
      const found = await this.#data.payment(paymentId);
      if (found === undefined)
        return this.#notFound(ctx, 'The store knows nothing of this payment (or its records expired).');
      const done = request.query.get('done') ?? '';
      const result = Object.hasOwn(DESK_RESULTS, done) ? (done as DeskResult) : undefined;
      return this.#page(200, paymentPage(ctx, this.#cleaned(found), result));
    }
    const action = parts[2];
    if (!ACTIONS.has(action)) return this.#notFound(ctx);
    if (request.method !== 'POST') return this.#notAllowed(ctx);
    // A browser says where a form came from; another site's form is refused before its token is read.
    if (
      request.header('sec-fetch-site') === 'cross-site' ||
      !this.#tokens.check(request.form?._csrf, who.id, this.#now())
    )
      return this.#page(
        403,
        messagePage(
          'Form expired',
          'This form is out of date or came from elsewhere: reload the page and try again.',
          ctx,
        ),
      );
    const result = await this.#actions.run(action as DeskAction, paymentId, who);
    return this.#redirect(`${request.base}/payments/${encodeURIComponent(paymentId)}?done=${result}`);
  }

  async #search(request: DeskRequest, ctx: DeskPageContext): Promise<DeskResponse> {
    const query = (request.query.get('q') ?? '').trim().slice(0, 200);
    if (query === '') return this.#redirect(request.base || '/');
    const by = request.query.get('by') ?? '';
    if (by === 'customer')
      return this.#page(200, customerPage(ctx, this.#clean(query), this.#cleaned(await this.#data.customer(query))));
    const nonce = tokenNonceOf(query, by === 'token');
    if (nonce !== undefined || by === 'token') {
      const paymentId = nonce === undefined ? undefined : await this.#data.byToken(nonce);
      if (paymentId !== undefined) return this.#redirect(`${request.base}/payments/${encodeURIComponent(paymentId)}`);
      return this.#page(
        200,
        messagePage(
          'Search',
          'No payment found for this webhook token: its binding is kept as long as the token is valid (webhook.tokenTtlSecs), then expires.',
          ctx,
        ),
      );
    }
    if ((await this.#data.payment(query)) !== undefined)
      return this.#redirect(`${request.base}/payments/${encodeURIComponent(query)}`);
    return this.#page(200, searchPage(ctx, this.#clean(query), this.#cleaned(await this.#data.order(query))));
  }

  #clean(text: string): string {
    return cleanText(text, (t) => this.#client.redactSecrets(t));
  }

  #cleaned<T>(value: T): T {
    return cleanDeep(value, (t) => this.#clean(t));
  }

  #notFound(ctx: DeskPageContext, text = 'There is no such page on the payments desk.'): DeskResponse {
    return this.#page(404, messagePage('Not found', text, ctx));
  }

  #notAllowed(ctx: DeskPageContext): DeskResponse {
    const answer = this.#page(405, messagePage('Not allowed', 'This page does not take that method.', ctx));
    answer.headers.allow = 'GET, POST';
    return answer;
  }

  #page(status: number, body: string): DeskResponse {
    return { status, headers: { ...SECURITY_HEADERS, 'content-type': 'text/html; charset=utf-8' }, body };
  }

  #redirect(location: string): DeskResponse {
    return { status: 303, headers: { ...SECURITY_HEADERS, location }, body: '' };
  }

  /** Shows nothing of the client or the form key. */
  toJSON(): Record<string, never> {
    return {};
  }
}
