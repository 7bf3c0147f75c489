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
  location: string | null;
}

/**
 * A small browser-less client of the shop: never follows redirects (the tests assert them) and
 * keeps every body it received, so a test can check that no page ever showed a secret.
 */
export class ShopClient {
  readonly bodies: string[] = [];

  constructor(private readonly base: string) {}

  /** GET a path of the shop, or an absolute URL. */
  get(path: string): Promise<Page> {
    return this.request(path, { method: 'GET' });
  }

  /** POST an urlencoded form, as the pages' forms do. */
  post(path: string, form: Record<string, string> = {}): Promise<Page> {
    return this.request(path, { method: 'POST', body: new URLSearchParams(form) });
  }

  /** POST a form and GET where its 303 points (the admin's actions answer that way). */
  async postAndFollow(path: string, form: Record<string, string> = {}): Promise<Page> {
    const first = await this.post(path, form);
    if (first.status !== 303 || !first.location) throw new Error(`expected a 303 from ${path}, got ${first.status}`);
    return this.get(first.location);
  }

  private async request(path: string, init: RequestInit): Promise<Page> {
    const url = /^https?:/.test(path) ? path : `${this.base}${path}`;
    const res = await fetch(url, { ...init, redirect: 'manual' });
    const text = await res.text();
    this.bodies.push(text);
    return { status: res.status, headers: res.headers, text, location: res.headers.get('location') };
  }
}

/** The order id in a shop URL such as `/orders/ord_0123/success`. */
export function orderIdIn(url: string): string {
  const match = /\/orders\/(ord_[0-9a-f]+)\//.exec(url);
  if (!match) throw new Error(`no order id in ${url}`);
  return match[1];
}
