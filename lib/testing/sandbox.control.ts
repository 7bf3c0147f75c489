/**
 * The sandbox's control routes, for driving a running sandbox from outside its process
 * (`nestjs-payments sandbox pay <id>` and friends): `POST /_sandbox/payments/<id>/<action>`
 * settles a pending payment exactly as the checkout page's buttons and `completePayment` do,
 * webhook included, and answers JSON. Like the checkout page's buttons they need no key and
 * refuse a browser's cross-site request (a page elsewhere must not settle someone's payment).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isCrossSite, type SettleOutcome } from './sandbox.checkout.js';
import { sendJson } from './sandbox.http.js';
import type { SandboxState, Settlement } from './sandbox.state.js';
import type { SandboxPayment } from './sandbox.types.js';

/** Path prefix of the control routes. */
export const CONTROL_PATH = '/_sandbox/payments';

/** What the control routes do to a pending payment. */
export type SandboxAction = 'pay' | 'fail' | 'preauthorize' | 'expire';

/** The actions, in the order the usage lists them. */
export const SANDBOX_ACTIONS: readonly SandboxAction[] = ['pay', 'fail', 'preauthorize', 'expire'];

/** The JSON of a refused action: `error` is one of these words, `message` a sentence. */
export type ControlRefusal = 'unknown payment' | 'not pending' | 'not a pre-authorization';

/** What the control routes need of the sandbox. */
export interface ControlContext {
  /** The sandbox's memory. */
  readonly state: SandboxState;
  /** Changes the state, then delivers the webhook; shared with the checkout page and the test methods. */
  readonly settle: (paymentId: string, outcome: Settlement) => Promise<SettleOutcome>;
}

const ROUTE = new RegExp(`^${CONTROL_PATH}/([^/]+)/(${SANDBOX_ACTIONS.join('|')})$`);

/** The settlement an action asks for, or why it cannot apply to this payment (before anything changes). */
export function actionSettlement(
  action: SandboxAction,
  payment: SandboxPayment | undefined,
): Settlement | ControlRefusal {
  if (!payment) return 'unknown payment';
  if (payment.state !== 'pending') return 'not pending';
  switch (action) {
    case 'pay':
      return 'paid';
    case 'preauthorize':
      return payment.kind === 'preauthorized' ? 'paid' : 'not a pre-authorization';
    case 'fail':
      return 'failed';
    case 'expire':
      return 'expired';
    default: {
      const never: never = action;
      return never;
    }
  }
}

function refuse(
  res: ServerResponse,
  error: ControlRefusal,
  paymentId: string,
  payment: SandboxPayment | undefined,
): void {
  const message =
    error === 'unknown payment'
      ? `unknown payment: the sandbox has no payment ${paymentId}`
      : error === 'not pending'
        ? `payment ${paymentId} is ${payment?.state ?? 'settled'}, not pending: it can no longer be settled`
        : `payment ${paymentId} is not a pre-authorization: use pay`;
  sendJson(res, error === 'unknown payment' ? 404 : 409, { error, message, ...(payment && { state: payment.state }) });
}

/** Answers a control request; false, answering nothing, when the path is not a control route. */
export async function handleControlRequest(
  ctx: ControlContext,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<boolean> {
  if (!url.pathname.startsWith(`${CONTROL_PATH}/`)) return false;
  const match = ROUTE.exec(url.pathname);
  let paymentId: string | undefined;
  try {
    paymentId = match ? decodeURIComponent(match[1]) : undefined;
  } catch {
    paymentId = undefined;
  }
  if (!match || paymentId === undefined) {
    sendJson(res, 404, {
      error: 'not found',
      message: `use POST ${CONTROL_PATH}/<paymentId>/<${SANDBOX_ACTIONS.join('|')}>`,
    });
    return true;
  }
  if (req.method !== 'POST') {
    sendJson(res, 405, { error: 'method not allowed', message: 'use POST' }, { Allow: 'POST' });
    return true;
  }
  if (isCrossSite(req)) {
    sendJson(res, 403, {
      error: 'forbidden',
      message: 'the control routes refuse requests from web pages of another site',
    });
    return true;
  }
  const payment = ctx.state.get(paymentId);
  const settlement = actionSettlement(match[2] as SandboxAction, payment);
  if (settlement !== 'paid' && settlement !== 'failed' && settlement !== 'expired') {
    refuse(res, settlement, paymentId, payment);
    return true;
  }
  const outcome = await ctx.settle(paymentId, settlement);
  if (!outcome.ok) {
    // Settled by someone else between the read and now.
    refuse(res, outcome.reason === 'unknown' ? 'unknown payment' : 'not pending', paymentId, ctx.state.get(paymentId));
    return true;
  }
  const { payment: settled, status, delivered, attempts, lastStatus, webhook } = outcome.settlement;
  sendJson(res, 200, {
    paymentId: settled.paymentId,
    state: settled.state,
    status,
    delivered,
    attempts,
    ...(lastStatus !== undefined && { lastStatus }),
    ...(webhook?.error !== undefined && { webhookError: webhook.error }),
  });
  return true;
}
