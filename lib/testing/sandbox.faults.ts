/**
 * Fault injection: per path, make the sandbox slow, answer garbage, or drop the connection,
 * so a client's timeout, error mapping and retry rules can be tested against a real socket.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { send } from './sandbox.http.js';
import type { SandboxFault } from './sandbox.types.js';

interface ArmedFault {
  readonly spec: Readonly<SandboxFault>;
  /** Applications left; undefined means until cleared. */
  remaining?: number;
}

function isNonNegativeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/** Throws a TypeError naming the first invalid field, so a typo in a test fails loudly. */
function validate(path: string, spec: SandboxFault): void {
  if (!path.startsWith('/')) throw new TypeError(`fault path must start with '/', got ${JSON.stringify(path)}`);
  if (spec.status !== undefined && !(Number.isInteger(spec.status) && spec.status >= 100 && spec.status <= 599)) {
    throw new TypeError('fault status must be an integer from 100 to 599');
  }
  if (spec.delayMs !== undefined && !isNonNegativeInteger(spec.delayMs))
    throw new TypeError('fault delayMs must be a non-negative integer');
  if (spec.times !== undefined && !(isNonNegativeInteger(spec.times) && spec.times > 0))
    throw new TypeError('fault times must be a positive integer');
  if (spec.body !== undefined && typeof spec.body !== 'string') throw new TypeError('fault body must be a string');
  if (spec.contentType !== undefined && typeof spec.contentType !== 'string')
    throw new TypeError('fault contentType must be a string');
}

function defaultContentType(body: string): string {
  try {
    JSON.parse(body);
    return 'application/json';
  } catch {
    return 'text/html';
  }
}

/** The faults armed on a sandbox, keyed by exact request path (no query string) or `prefix/*`. */
export class SandboxFaults {
  private readonly armed = new Map<string, ArmedFault>();

  /** Arms (or, with null, clears) the fault of one path. */
  set(path: string, spec: SandboxFault | null): void {
    if (spec === null) {
      this.armed.delete(path);
      return;
    }
    validate(path, spec);
    this.armed.set(path, { spec: Object.freeze({ ...spec }), remaining: spec.times });
  }

  /** Clears every fault. */
  clear(): void {
    this.armed.clear();
  }

  /**
   * The fault to apply to this request, counted as applied; undefined when none. An exact path
   * wins; otherwise the longest armed `prefix/*` whose prefix the path is under.
   */
  take(path: string): Readonly<SandboxFault> | undefined {
    const key = this.armed.has(path) ? path : this.prefixKey(path);
    const fault = key === undefined ? undefined : this.armed.get(key);
    if (!fault || key === undefined) return undefined;
    if (fault.remaining !== undefined) {
      fault.remaining -= 1;
      if (fault.remaining <= 0) this.armed.delete(key);
    }
    return fault.spec;
  }

  private prefixKey(path: string): string | undefined {
    let best: string | undefined;
    for (const key of this.armed.keys()) {
      if (key.endsWith('/*') && path.startsWith(key.slice(0, -1)) && (best === undefined || key.length > best.length))
        best = key;
    }
    return best;
  }
}

/**
 * Applies a fault. Resolves true when the fault answered (or dropped) the request, false when
 * the request must now be handled normally (a pure delay).
 *
 * @param signal aborted when the sandbox closes, so a pending delay does not keep a timer alive
 */
export async function applyFault(
  fault: Readonly<SandboxFault>,
  req: IncomingMessage,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<boolean> {
  if (fault.delayMs) {
    try {
      await sleep(fault.delayMs, undefined, { signal });
    } catch {
      req.socket.destroy();
      return true;
    }
  }
  if (fault.reset) {
    // resetAndDestroy sends a TCP RST where available, which is what a real broken peer does.
    const socket = req.socket as typeof req.socket & { resetAndDestroy?: () => void };
    if (typeof socket.resetAndDestroy === 'function') socket.resetAndDestroy();
    else socket.destroy();
    return true;
  }
  if (fault.status === undefined && fault.body === undefined) return false;
  const body = fault.body ?? '';
  send(res, fault.status ?? 200, fault.contentType ?? defaultContentType(body), body);
  return true;
}
