/**
 * The emulated `/api/v2/` endpoints. Success and error bodies follow the documented shapes exactly
 * (docs/service-facts.md); where the documentation shows nothing, the sandbox's choice is written next to the code:
 *
 * - Missing or wrong credentials: HTTP 401, nested shape `{"result":{"status":401,"message":"Unauthorized"}}`,
 *   checked before anything else (even on unknown paths), as a gateway would.
 * - HTTP status of refund and cancel: 200 on success, 400 on every refusal.
 * - Refusal codes beyond the documented examples: `BAD_REQUEST` for a missing `payment_id`, a
 *   non-JSON body or a wrong Content-Type (message says which).
 * - refund, cancel and confirm of an id the sandbox does not know (a typo, or a payment made
 *   before a restart without a state file): HTTP 404, flat shape, `PAYMENT_NOT_FOUND`, message
 *   "Unknown payment: ...", rather than a refusal code that would blame the payment's state.
 * - Payment state after a refund: `refunded`; a second refund is `REFUND_NOT_ALLOWED`. A captured
 *   pre-authorization is refunded too, for its captured amount (sandbox.state.ts says why).
 * - Unknown path: 404 `{"result":{"status":404,"message":"Not Found"}}`; known path, wrong
 *   method: 405 in the endpoint's error shape, with an `Allow` header.
 * - verify_payment (service facts §1) of an unknown id: 404 `{"result":{"status":404,"message":"Payment not found"}}`
 *   (the page shows no error; moodle-paygw_flouci handles a 404 there, and the nested shape is
 *   the one of the other GET endpoint). Over the rate limit: 429 with `Retry-After` (seconds) and
 *   `{"result":{"status":429,"message":"Too Many Requests"}}`.
 * - confirm_payment (service facts §5) errors, flat shape, HTTP 400: `CAPTURE_NOT_ALLOWED` when there is
 *   no held pre-authorization to capture (unknown, pending, standard, already captured or
 *   cancelled), `AMOUNT_EXCEEDS_AUTHORIZATION` when `amount` is above the held amount,
 *   `BAD_REQUEST` for a missing `payment_id` or an `amount` that is not a positive digit string.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isJsonContentType, sendJson } from './sandbox.http.js';
import type { VerifyLimiter } from './sandbox.ratelimit.js';
import { SANDBOX_CARD, type SandboxState } from './sandbox.state.js';
import { verifyStatusOf } from './sandbox.status.js';
import type { SandboxGenerateAnswer, SandboxPayment } from './sandbox.types.js';
import { isJsonObject, isValidClientId, parseGenerateRequest, parseMillimes } from './sandbox.validation.js';

/** Service name label of the `generate_payment` answer (the documentation shows a label, not its value). */
export const SANDBOX_SERVICE_NAME = 'Payment Service Sandbox';

/** What the endpoints need from the sandbox. */
export interface ApiContext {
  /** The sandbox's memory. */
  readonly state: SandboxState;
  /** The exact `Authorization` value accepted. */
  readonly authorization: string;
  /** Shape of the generate_payment answer. */
  readonly generateAnswer: SandboxGenerateAnswer;
  /** Counts verify calls and applies their rate limit. */
  readonly verifyLimiter: VerifyLimiter;
}

/** Path prefix of verify_payment; the payment id is the rest of the path. */
export const VERIFY_PATH_PREFIX = '/api/v2/verify_payment/';

/** Error shape of an endpoint (spec section 7). */
type ErrorShape = 'nested' | 'flat';

interface Route {
  method: 'GET' | 'POST';
  shape: ErrorShape;
  handle: (
    ctx: ApiContext,
    res: ServerResponse,
    input: { body: Record<string, unknown>; query: URLSearchParams; param: string },
  ) => void;
}

function nestedError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { result: { status, message } });
}

function flatError(res: ServerResponse, status: number, message: string, code: string): void {
  sendJson(res, status, { status: 'error', message, code });
}

/** The answer of refund, cancel and confirm for an id the sandbox does not know. */
function unknownPayment(res: ServerResponse): void {
  flatError(res, 404, 'Unknown payment: the sandbox has no payment with this id', 'PAYMENT_NOT_FOUND');
}

function errorIn(shape: ErrorShape, res: ServerResponse, status: number, message: string, code: string): void {
  // The nested shape carries no code; generate_payment's only documented message is "Bad Request".
  if (shape === 'nested') nestedError(res, status, status === 400 ? 'Bad Request' : message);
  else flatError(res, status, message, code);
}

function paymentIdOf(body: Record<string, unknown>): string | undefined {
  return typeof body.payment_id === 'string' && body.payment_id !== '' ? body.payment_id : undefined;
}

const routes: Record<string, Route> = {
  '/api/v2/generate_payment': {
    method: 'POST',
    shape: 'nested',
    handle(ctx, res, { body }) {
      const input = parseGenerateRequest(body);
      if (!input) return nestedError(res, 400, 'Bad Request');
      const payment = ctx.state.createPayment(input);
      if (ctx.generateAnswer === 'minimal')
        return sendJson(res, 200, { result: { payment_id: payment.paymentId, link: payment.link } });
      const result: Record<string, unknown> = { success: true, payment_id: payment.paymentId, link: payment.link };
      if (payment.developerTrackingId !== undefined) result.developer_tracking_id = payment.developerTrackingId;
      sendJson(res, 200, { result, name: SANDBOX_SERVICE_NAME, code: 0, version: 'v2' });
    },
  },
  '/api/v2/refund_payment': {
    method: 'POST',
    shape: 'flat',
    handle(ctx, res, { body }) {
      const paymentId = paymentIdOf(body);
      if (paymentId === undefined) return flatError(res, 400, 'payment_id is required', 'BAD_REQUEST');
      if (!ctx.state.get(paymentId)) return unknownPayment(res);
      const payment = ctx.state.refund(paymentId);
      if (!payment) return flatError(res, 400, 'Payment cannot be refunded', 'REFUND_NOT_ALLOWED');
      sendJson(res, 200, {
        result: {
          refund_id: payment.refundId,
          payment_id: payment.paymentId,
          // The spec leaves the unit of this field unstated; the sandbox answers millimes,
          // the unit of the payment's own amount: what was taken (the captured part of a
          // pre-authorization).
          amount: payment.capturedAmount ?? payment.amount,
          status: 'success',
          refunded_at: payment.refundedAt,
        },
        status: 'success',
      });
    },
  },
  '/api/v2/cancel_payment': {
    method: 'POST',
    shape: 'flat',
    handle(ctx, res, { body }) {
      const paymentId = paymentIdOf(body);
      if (paymentId === undefined) return flatError(res, 400, 'payment_id is required', 'BAD_REQUEST');
      if (!ctx.state.get(paymentId)) return unknownPayment(res);
      const payment = ctx.state.cancel(paymentId);
      if (!payment) return flatError(res, 400, 'Pre-auth payment cannot be cancelled', 'CANCELLATION_FAILED');
      sendJson(res, 200, {
        result: { payment_id: payment.paymentId, status: 'cancelled', cancelled_at: payment.cancelledAt },
        status: 'success',
      });
    },
  },
  '/api/v2/confirm_payment': {
    method: 'POST',
    shape: 'flat',
    handle(ctx, res, { body }) {
      const paymentId = paymentIdOf(body);
      if (paymentId === undefined) return flatError(res, 400, 'payment_id is required', 'BAD_REQUEST');
      const amount = 'amount' in body ? parseMillimes(body.amount) : undefined;
      if ('amount' in body && amount === undefined) {
        return flatError(res, 400, 'amount must be a positive number of millimes as a string of digits', 'BAD_REQUEST');
      }
      if (!ctx.state.get(paymentId)) return unknownPayment(res);
      const captured = ctx.state.capture(paymentId, amount);
      if ('error' in captured) {
        return captured.error === 'exceeds'
          ? flatError(res, 400, 'Amount exceeds the pre-authorized amount', 'AMOUNT_EXCEEDS_AUTHORIZATION')
          : flatError(res, 400, 'Payment cannot be captured', 'CAPTURE_NOT_ALLOWED');
      }
      sendJson(res, 200, {
        result: {
          payment_id: captured.paymentId,
          status: 'confirmed',
          amount: captured.capturedAmount,
          confirmed_at: captured.capturedAt,
        },
        status: 'success',
      });
    },
  },
  '/api/v2/bindings/list': {
    method: 'GET',
    shape: 'nested',
    handle(ctx, res, { query }) {
      const values = query.getAll('client_id');
      // A repeated client_id is ambiguous; refusing it beats picking one silently.
      const clientId = values.length === 1 ? values[0] : undefined;
      if (!isValidClientId(clientId)) return nestedError(res, 400, 'Invalid client_id');
      sendJson(res, 200, { result: { success: true, bindings: ctx.state.bindings(clientId) }, status: 'success' });
    },
  },
};

const verifyRoute: Route = {
  method: 'GET',
  shape: 'nested',
  handle(ctx, res, { param }) {
    const decision = ctx.verifyLimiter.call(param);
    if (!decision.allowed) {
      return sendJson(
        res,
        429,
        { result: { status: 429, message: 'Too Many Requests' } },
        { 'Retry-After': String(decision.retryAfterSecs) },
      );
    }
    const payment = ctx.state.get(param);
    if (!payment) return nestedError(res, 404, 'Payment not found');
    sendJson(res, 200, verifyAnswer(payment));
  },
};

function findRoute(pathname: string): { route: Route; param: string } | undefined {
  if (Object.hasOwn(routes, pathname)) return { route: routes[pathname], param: '' };
  if (!pathname.startsWith(VERIFY_PATH_PREFIX)) return undefined;
  const segment = pathname.slice(VERIFY_PATH_PREFIX.length);
  if (segment.includes('/')) return undefined;
  try {
    return { route: verifyRoute, param: decodeURIComponent(segment) };
  } catch {
    // Undecodable: no payment can have that id, so it is counted and answered as unknown.
    return { route: verifyRoute, param: segment };
  }
}

/**
 * Answers one request under `/api/v2/`, whose body has already been read (and logged).
 * Never throws: every outcome is an HTTP answer.
 */
export function handleApiRequest(
  ctx: ApiContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  rawBody: string,
): void {
  if (req.headers.authorization !== ctx.authorization) return nestedError(res, 401, 'Unauthorized');
  const found = findRoute(url.pathname);
  if (!found) return nestedError(res, 404, 'Not Found');
  const { route, param } = found;
  if (req.method !== route.method) {
    res.setHeader('Allow', route.method);
    return errorIn(route.shape, res, 405, 'Method Not Allowed', 'METHOD_NOT_ALLOWED');
  }
  let body: Record<string, unknown> = {};
  if (route.method === 'POST') {
    if (!isJsonContentType(req))
      return errorIn(route.shape, res, 400, 'Content-Type must be application/json', 'BAD_REQUEST');
    let parsed: unknown;
    try {
      parsed = JSON.parse(rawBody);
    } catch {
      parsed = undefined;
    }
    if (!isJsonObject(parsed))
      return errorIn(route.shape, res, 400, 'Request body must be a JSON object', 'BAD_REQUEST');
    body = parsed;
  }
  route.handle(ctx, res, { body, query: url.searchParams, param });
}

/**
 * The body of a `verify_payment` answer (docs/service-facts.md §1), built from a payment snapshot.
 * Its shape follows the docs' example key for key; where the example cannot say (a payment not
 * yet paid, a decline), the sandbox's choices are:
 *
 * - `result.amount` is a JSON number of millimes, as in the example (a string everywhere else):
 *   the held amount for a pre-authorization, the captured amount once captured;
 * - card fields (`name`, `pan`, `payment_system`, `expiration`, `approval_code`) carry the sandbox
 *   card once the customer paid, and are `""` before (or without) a payment;
 * - `binding_id` is present only when paying created a binding (payment made with `client_id`);
 * - a declined payment adds `details.reason: "declined by the customer"` (the docs say "details
 *   say why" without naming the field);
 * - `developer_tracking_id` is present only when the payment has one, as in generate's answer.
 */
/** Top-level labels of the answer, exactly as the docs' example shows them. */
export const VERIFY_LABELS = Object.freeze({ name: 'developers', code: 0, version: '2.0.0' });

/** ISO 4217 numeric code of the Tunisian dinar, as the docs' example writes it. */
const CURRENCY_TND = '788';

/** The whole JSON answer of a successful verify_payment for `payment`. */
export function verifyAnswer(payment: SandboxPayment): Record<string, unknown> {
  const status = verifyStatusOf(payment.state);
  const paid = payment.paidAt !== undefined;
  const details: Record<string, unknown> = {
    order_number: payment.orderNumber,
    name: paid ? SANDBOX_CARD.holder : '',
    pan: paid ? SANDBOX_CARD.pan : '',
    payment_system: paid ? SANDBOX_CARD.brand : '',
    expiration: paid ? SANDBOX_CARD.expiration : '',
    approval_code: payment.approvalCode ?? '',
    currency: CURRENCY_TND,
    phone_number: '',
    email: '',
    bank_country_code: '',
    destinations: payment.destinations ?? [],
  };
  if (payment.bindingId !== undefined) details.binding_id = payment.bindingId;
  if (payment.state === 'failed') details.reason = 'declined by the customer';
  const result: Record<string, unknown> = {
    type: 'card',
    amount: Number(payment.capturedAmount ?? payment.amount),
    status,
    details,
  };
  if (payment.developerTrackingId !== undefined) result.developer_tracking_id = payment.developerTrackingId;
  return { success: true, result, status_code: 200, ...VERIFY_LABELS };
}
