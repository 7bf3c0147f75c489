import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';

/** A one-time message shown at the top of the admin page after an action. */
export interface Flash {
  /** Green for success, red for errors. */
  readonly kind: 'success' | 'error';
  /** The text (escaped when rendered). */
  readonly text: string;
}

const MAX_PENDING = 200;

/**
 * One-time messages carried across the redirect after an admin action (POST, then 303 to
 * GET /admin?flash=<id>, so reloading the page never repeats a refund). The text stays on the
 * server: a message in the URL could be forged into a fake "refund succeeded".
 */
@Injectable()
export class FlashMessages {
  private readonly pending = new Map<string, Flash>();

  /** Stores a message and returns the id to put in the redirect URL. */
  put(kind: Flash['kind'], text: string): string {
    // Bounded: messages never read (a closed tab) must not pile up.
    if (this.pending.size >= MAX_PENDING) this.pending.delete(this.pending.keys().next().value!);
    const id = randomBytes(9).toString('base64url');
    this.pending.set(id, { kind, text });
    return id;
  }

  /** Returns the message once, then forgets it. */
  take(id: unknown): Flash | undefined {
    if (typeof id !== 'string') return undefined;
    const flash = this.pending.get(id);
    this.pending.delete(id);
    return flash;
  }
}
