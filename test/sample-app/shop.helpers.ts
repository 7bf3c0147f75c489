import type { LoggerService } from '@nestjs/common';

/** A Nest logger that keeps every line, to assert on what the shop logs (and never logs). */
export class CapturingLogger implements LoggerService {
  readonly lines: string[] = [];

  log(message: unknown, context?: string): void {
    this.push('log', message, context);
  }
  warn(message: unknown, context?: string): void {
    this.push('warn', message, context);
  }
  error(message: unknown, ...rest: unknown[]): void {
    this.push('error', message, rest.map(String).join(' '));
  }
  debug(message: unknown, context?: string): void {
    this.push('debug', message, context);
  }
  verbose(message: unknown, context?: string): void {
    this.push('verbose', message, context);
  }
  fatal(message: unknown, context?: string): void {
    this.push('fatal', message, context);
  }

  private push(level: string, message: unknown, context?: string): void {
    this.lines.push(`${level} [${context ?? ''}] ${typeof message === 'string' ? message : JSON.stringify(message)}`);
  }
}

/** An HTTP answer with its body read. */
export interface Page {
  status: number;
  headers: Headers;
  text: string;
  /** The body as {@link markup} normalises it, for assertions on tags. */
  markup: string;
  location: string | null;
}

/**
 * The page's HTML with layout whitespace taken out (Prettier formats the views' `html` templates,
 * so line breaks and indentation move): runs of whitespace become one space, none is left between
 * tags, and `<input ... />` reads `<input ...>` as the browser parses it.
 */
export function markup(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/>\s+</g, '><')
    .replace(/\s*\/>/g, '>');
}

/** The value of the forms' hidden `_csrf` field in a page, if any. */
export function csrfTokenIn(text: string): string | undefined {
  return /name="_csrf" value="([^"]+)"/.exec(text)?.[1];
}

/**
 * A small browser-less client of the shop: keeps its cookies (customer id, CSRF cookie, admin
 * session) like a browser, adds the CSRF token of the last page it saw to the forms it posts,
 * never follows redirects (the tests assert them), and keeps every body it received, so a test
 * can check that no page ever showed a secret.
 */
export class ShopClient {
  readonly bodies: string[] = [];
  readonly cookies = new Map<string, string>();
  /** The CSRF token of the last page that had forms. */
  csrfToken?: string;

  constructor(private readonly base: string) {}

  /** GET a path of the shop, or an absolute URL. */
  get(path: string): Promise<Page> {
    return this.request(path, { method: 'GET' });
  }

  /**
   * POST an urlencoded form, as the pages' forms do, with the current CSRF token unless the
   * form has its own `_csrf` or `csrf: false` is given.
   */
  post(path: string, form: Record<string, string> = {}, options: { csrf?: boolean } = {}): Promise<Page> {
    const fields = { ...form };
    if (options.csrf !== false && fields._csrf === undefined && this.csrfToken !== undefined)
      fields._csrf = this.csrfToken;
    return this.request(path, { method: 'POST', body: new URLSearchParams(fields) });
  }

  /** POST a form and GET where its 303 points (the admin's actions answer that way). */
  async postAndFollow(path: string, form: Record<string, string> = {}): Promise<Page> {
    const first = await this.post(path, form);
    if (first.status !== 303 || !first.location)
      throw new Error(`expected a 303 from ${path}, got ${first.status}: ${first.text.slice(0, 300)}`);
    return this.get(first.location);
  }

  /** Signs in to the admin (GET the login page for its token, POST the password). */
  async signIn(password: string): Promise<Page> {
    await this.get('/admin/login');
    const res = await this.post('/admin/login', { password, next: '/admin' });
    if (res.status !== 303) throw new Error(`sign-in failed: ${res.status}`);
    return this.get(res.location!);
  }

  /** Loads the catalog (which sets the customer and CSRF cookies) and buys a product through its form. */
  async buy(productId: string, options: { saveCard?: boolean } = {}): Promise<Page> {
    await this.get('/');
    return this.post('/orders', { productId, ...(options.saveCard && { saveCard: 'on' }) });
  }

  private async request(path: string, init: RequestInit): Promise<Page> {
    const url = /^https?:/.test(path) ? path : `${this.base}${path}`;
    const sameOrigin = url.startsWith(this.base);
    const headers = new Headers(init.headers);
    if (sameOrigin && this.cookies.size > 0)
      headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(url, { ...init, headers, redirect: 'manual' });
    if (sameOrigin) {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const eq = pair.indexOf('=');
        const name = pair.slice(0, eq).trim();
        const value = pair.slice(eq + 1).trim();
        if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) this.cookies.delete(name);
        else this.cookies.set(name, value);
      }
    }
    const text = await res.text();
    this.bodies.push(text);
    const token = csrfTokenIn(text);
    if (token !== undefined) this.csrfToken = token;
    return {
      status: res.status,
      headers: res.headers,
      text,
      markup: markup(text),
      location: res.headers.get('location'),
    };
  }
}

/** The order id in a shop URL such as `/orders/ord_0123/success`. */
export function orderIdIn(url: string): string {
  const match = /\/orders\/(ord_[0-9a-f]+)\//.exec(url);
  if (!match) throw new Error(`no order id in ${url}`);
  return match[1];
}

/** The payment id at the end of a sandbox checkout link. */
export function paymentIdOf(link: string): string {
  return decodeURIComponent(new URL(link).pathname.split('/').pop()!);
}

/**
 * The customer id of a client's signed `shop_customer` cookie (`s:<id>.<signature>`, URL-encoded),
 * as the shop reads it back.
 */
export function customerIdOf(client: ShopClient): string {
  const raw = client.cookies.get('shop_customer');
  const match = raw === undefined ? null : /^s:(cus_[0-9a-f]{16})\.[A-Za-z0-9+/]{43}$/.exec(decodeURIComponent(raw));
  if (!match) throw new Error(`no signed customer cookie: ${String(raw)}`);
  return match[1];
}
