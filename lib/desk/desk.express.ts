import type { IncomingMessage, ServerResponse } from 'node:http';
import { PaymentsDeskEngine, type DeskRequest, type DeskResponse } from './desk.handler.js';
import type { PaymentsDeskOptions } from './desk.options.js';
import type { PaymentsLogger } from '../core/common/index.js';

/** What Express gives a mounted handler beyond Node's request (read when present). */
interface MountedRequest extends IncomingMessage {
  baseUrl?: string;
  body?: unknown;
}

/** A request handler to mount with `app.use(path, desk)`; Express routes every request below `path` to it. */
export type PaymentsDeskHandler<R extends IncomingMessage = IncomingMessage> = (
  request: R,
  response: ServerResponse,
  next: (error?: unknown) => void,
) => void;

/** The largest form the desk reads (its forms hold one token). */
const MAX_FORM_BYTES = 8 * 1024;

/** Default log of the actions on Express: one line on stdout each, and warnings on stderr. */
const STDOUT_LOGGER: PaymentsLogger = {
  log: (message) => process.stdout.write(`[nestjs-payments] ${message}\n`),
  warn: (message) => process.stderr.write(`[nestjs-payments] WARN ${message}\n`),
  error: (message) => process.stderr.write(`[nestjs-payments] ERROR ${message}\n`),
};

function refuse(problem: string): never {
  throw new TypeError(`createPaymentsDesk: ${problem}`);
}

/**
 * The payments desk for an Express app: server-rendered pages of what needs a person (handlers
 * failing, payments overdue, duplicates to refund, mismatches, failed refunds), a page per payment,
 * and its actions (check and run the handlers again, refund a duplicate), behind the host's own
 * `authorize` check. Mount it under a path of its own, after the host's session middleware:
 *
 * ```ts
 * app.use('/desk', createPaymentsDesk({ client, authorize: (req) => req.session.user?.email }));
 * ```
 * @throws TypeError without `client` or `authorize` (the desk never serves pages unguarded)
 */
export function createPaymentsDesk<R extends IncomingMessage = IncomingMessage>(
  options: PaymentsDeskOptions<R>,
): PaymentsDeskHandler<R> {
  const given = options as Partial<PaymentsDeskOptions<R>> | undefined;
  if (given?.client === undefined || typeof given.client.listOutcomes !== 'function')
    refuse('options.client must be the PaymentsClient whose payments the desk shows');
  if (typeof given.authorize !== 'function')
    refuse(
      "options.authorize is required: the desk shows payments and refunds them, so it is never served unguarded. Pass (req) => the signed-in person's id (or undefined for 401, false for 403)",
    );
  const { client, authorize, ...rest } = options;
  const engine = new PaymentsDeskEngine(client, rest, STDOUT_LOGGER);
  return (request, response, next) => {
    void serve(engine, authorize, request, response).catch(next);
  };
}

async function serve<R extends IncomingMessage>(
  engine: PaymentsDeskEngine,
  authorize: PaymentsDeskOptions<R>['authorize'],
  request: R,
  response: ServerResponse,
): Promise<void> {
  const mounted = request as MountedRequest;
  const url = new URL(request.url ?? '/', 'http://desk.invalid');
  const authorization = await authorize(request);
  const form = request.method === 'POST' && authorization ? await formOf(mounted) : undefined;
  const desk: DeskRequest = {
    method: request.method ?? 'GET',
    path: url.pathname,
    query: url.searchParams,
    form,
    header: (name) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value[0] : value;
    },
    base: (mounted.baseUrl ?? '').replace(/\/+$/, ''),
  };
  write(response, await engine.handle(desk, authorization));
}

/** The form of a POST: the host's parsed body when it parsed one, else read here. */
async function formOf(request: MountedRequest): Promise<Record<string, unknown> | undefined> {
  if (typeof request.body === 'object' && request.body !== null && !Buffer.isBuffer(request.body))
    return request.body as Record<string, unknown>;
  if (request.readableEnded || !/^application\/x-www-form-urlencoded\b/i.test(request.headers['content-type'] ?? ''))
    return undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_FORM_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
}

function write(response: ServerResponse, answer: DeskResponse): void {
  response.statusCode = answer.status;
  for (const [name, value] of Object.entries(answer.headers)) response.setHeader(name, value);
  response.end(answer.body);
}
