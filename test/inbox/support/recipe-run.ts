import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { PaymentConfirmedEvent, PaymentsModuleOptions } from 'nestjs-payments';
import { MemoryPaymentsStore, type OutcomeFinish, type PaymentsInbox } from 'nestjs-payments/store';
import type { PaymentsSandbox } from 'nestjs-payments/testing';
import { orderState, type HostDb } from './host-database.js';
import type { Recipe, RecipeCase } from './recipe-cases.js';

// One inbox recipe run in an app of one front end (the Express wiring, the Nest one): the order is
// paid on the sandbox, whose webhook reaches the app over HTTP, then delivered again as the service
// would; the order, its events and the inbox row are read after each delivery. Plain code, no
// Jest: the recipes' suites (Express, Nest 12) and the Nest 11 compatibility app
// (test/compat/apps/nest11-inbox) run the same checks, each with its own assertions.

/** The app a front end starts: its webhook route runs the recipe's inbox and handler. */
export interface RecipeApp {
  /** Serves the app's requests (the server the sandbox's webhook reaches). */
  listener: http.RequestListener;
  /** Creates a payment through the app's client. */
  generatePayment(input: { amount: string; developerTrackingId: string }): Promise<{ paymentId: string }>;
  close(): Promise<void>;
}

/** Starts an app wired as a guide's block shows, with a recipe's inbox and handler and the plugin's other options. */
export type FrontEnd = (inbox: PaymentsInbox, handler: Recipe, options: PaymentsModuleOptions) => Promise<RecipeApp>;

/** What one run saw. */
export interface RecipeRun {
  /** The webhook's answer to each delivery. */
  answers: number[];
  /** The order after each delivery. */
  states: Array<{ status: string; events: string[] }>;
  /** How many times the handler ran. */
  calls: number;
  /** What the plugin logged. */
  logs: string[];
  paymentId: string;
  orderId: string;
  /** The payment's inbox rows. */
  inboxRows: Array<{ payment_id: string; event: string; order_id: string }>;
}

/** How a run goes besides the recipe. */
export interface RunOptions {
  /** Runs after the recipe, in the same handler (`call` counts from 1). */
  after?: (call: number, event: PaymentConfirmedEvent) => Promise<void>;
  /** The plugin's store (default a fresh memory store). */
  store?: MemoryPaymentsStore;
  /** Deliveries of the webhook: the sandbox's, then the service's again (default 3). */
  deliveries?: number;
  /** Runs before delivery `n` (from 0). */
  between?: (delivery: number) => Promise<void>;
}

/** At least 32 characters. */
const SECRET = 'whsec_inbox_recipes_0123456789abcdef';

/** A memory store that loses the first done marker it is asked for: the crash after the host's commit. */
export class LosesFirstDone extends MemoryPaymentsStore {
  lost = 0;
  override async finishOutcome(finish: OutcomeFinish): Promise<boolean> {
    if (finish.claim === 'done' && this.lost++ === 0) {
      await this.release(finish.eventKey, finish.owner);
      throw new Error('the process died before the done marker');
    }
    return super.finishOutcome(finish);
  }
}

function listen(server: http.Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

/** The service's delivery again: the signed URL the sandbox called, the same body; its answer's status. */
async function deliverAgain(webhook: string, paymentId: string): Promise<number> {
  const answer = await fetch(webhook, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ payment_id: paymentId, status: 'SUCCESS' }),
  });
  await answer.arrayBuffer();
  return answer.status;
}

/**
 * Pays an order on `sandbox` (started with `webhookAttempts: 1`) through an app of `frontEnd` whose
 * handler runs `recipe` then `options.after`; the sandbox's webhook is the first delivery.
 */
export async function runRecipe(
  frontEnd: FrontEnd,
  sandbox: PaymentsSandbox,
  db: HostDb,
  inbox: PaymentsInbox,
  recipe: Recipe,
  options: RunOptions = {},
): Promise<RecipeRun> {
  const orderId = `ord_inbox_${randomUUID().slice(0, 8)}`;
  await db.query(`INSERT INTO orders (id) VALUES (${db.p(1)})`, [orderId]);
  const logs: string[] = [];
  const keep = (line: string) => void logs.push(line);
  let calls = 0;
  const server = http.createServer();
  const url = await listen(server);
  const app = await frontEnd(
    inbox,
    async (event) => {
      calls++;
      await recipe(event);
      await options.after?.(calls, event);
    },
    sandbox.options({
      maxRetries: 0,
      webhook: { publicUrl: `${url}/payments/webhook`, secret: SECRET },
      reconciliation: { enabled: false },
      logger: { log: keep, warn: keep, error: keep },
      store: options.store ?? new MemoryPaymentsStore(),
    }),
  );
  server.on('request', app.listener);
  try {
    const { paymentId } = await app.generatePayment({ amount: '9900', developerTrackingId: orderId });
    const answers: number[] = [];
    const states: RecipeRun['states'] = [];
    for (let i = 0; i < (options.deliveries ?? 3); i++) {
      await options.between?.(i);
      if (i === 0) {
        const settlement = await sandbox.completePayment(paymentId, { requireDelivery: false });
        answers.push(settlement.webhook?.status ?? 0);
      } else {
        answers.push(await deliverAgain(sandbox.getPayment(paymentId)!.webhook!, paymentId));
      }
      states.push(await orderState(db, orderId));
    }
    const rows = await db
      .query(`SELECT payment_id, event, order_id FROM payments_inbox WHERE payment_id = ${db.p(1)}`, [paymentId])
      .catch(() => []);
    const inboxRows = rows.map((r) => ({
      payment_id: String(r.payment_id),
      event: String(r.event),
      order_id: String(r.order_id),
    }));
    return { answers, states, calls, logs, paymentId, orderId, inboxRows };
  } finally {
    await app.close();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

export const PAID = { status: 'paid', events: ['paid'] };
export const PENDING = { status: 'pending', events: [] };

/** One check of a recipe: what a run saw, and what it must have seen. */
export interface RecipeCheck {
  name: string;
  run(
    frontEnd: FrontEnd,
    sandbox: PaymentsSandbox,
    db: HostDb,
    recipe: RecipeCase,
  ): Promise<{ observed: unknown; expected: unknown }>;
}

/** What every recipe must do in every app: the suites and the compatibility app run these. */
export const RECIPE_CHECKS: readonly RecipeCheck[] = [
  {
    name: 'a failed attempt leaves no write (nor inbox row); the next writes once; a redelivery runs nothing',
    async run(frontEnd, sandbox, db, recipe) {
      const { inbox, recipe: handler } = await recipe.setup(db);
      const run = await runRecipe(frontEnd, sandbox, db, inbox, handler, {
        after: async (call) => {
          if (call === 1) throw new Error('failed after the recipe wrote');
        },
      });
      return {
        observed: { answers: run.answers, states: run.states, calls: run.calls, inboxRows: run.inboxRows },
        expected: {
          answers: [500, 200, 200],
          states: [PENDING, PAID, PAID],
          calls: 2,
          inboxRows: [{ payment_id: run.paymentId, event: 'payment.confirmed', order_id: run.orderId }],
        },
      };
    },
  },
  {
    name: "the store lost its done marker after the host's commit: the next attempt runs no handler and finishes the bookkeeping",
    async run(frontEnd, sandbox, db, recipe) {
      const { inbox, recipe: handler } = await recipe.setup(db);
      const store = new LosesFirstDone();
      const run = await runRecipe(frontEnd, sandbox, db, inbox, handler, { store });
      return {
        observed: { answers: run.answers, states: run.states, calls: run.calls, lost: store.lost },
        // The first finish lost; the second attempt's finish marked it done; the third found it done.
        expected: { answers: [200, 200, 200], states: [PAID, PAID, PAID], calls: 1, lost: 2 },
      };
    },
  },
];
