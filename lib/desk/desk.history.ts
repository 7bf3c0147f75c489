import type { PaymentsClient } from '../core/client/index.js';

/** One action a person took on a payment from the desk. */
export interface DeskActionEntry {
  /** `run-handlers`, `refund` or `review`. */
  action: string;
  /** The actor's id (the principal's id). */
  by: string;
  /** The actor's name, as the host's `authorize` or guard named them. */
  name: string;
  /** ISO 8601 time the action ended. */
  at: string;
  /** What it did (the code of the desk's result, e.g. `handled`). */
  result: string;
}

/** The latest actions kept per payment. */
export const DESK_HISTORY_SIZE = 20;

/** The store key of one payment's actions (token ids in the binding port never hold a `:`). */
function historyKey(registration: string | undefined, paymentId: string): string {
  return `desk-actions:${registration ?? ''}:${paymentId}`;
}

function isEntry(value: unknown): value is DeskActionEntry {
  if (typeof value !== 'object' || value === null) return false;
  const e = value as Record<string, unknown>;
  return ['action', 'by', 'name', 'at', 'result'].every((k) => typeof e[k] === 'string');
}

/**
 * Who did what on a payment from the desk, kept through the store's binding port (every store
 * has it, so no migration): one binding per payment, its `developerTrackingId` the latest
 * {@link DESK_HISTORY_SIZE} entries as JSON, `createdAt` the latest entry's time. Each action
 * appends by a read then a write: two actions ending at the same instant on two instances may
 * keep one entry only (the log line of each action is written regardless).
 */
export class DeskHistory {
  /**
   * @param client the registration's client
   * @param retentionMs how long the actions of a payment are kept after its latest one
   * @param now the clock
   */
  constructor(
    private readonly client: PaymentsClient,
    private readonly retentionMs: number,
    private readonly now: () => number,
  ) {}

  /** The actions kept for `paymentId`, oldest first. */
  async list(paymentId: string): Promise<DeskActionEntry[]> {
    const binding = await this.client.store.findBinding(historyKey(this.client.name, paymentId));
    if (binding === undefined || binding.paymentId !== paymentId || binding.developerTrackingId === undefined)
      return [];
    try {
      const entries = JSON.parse(binding.developerTrackingId) as unknown;
      return Array.isArray(entries) ? entries.filter(isEntry) : [];
    } catch {
      return [];
    }
  }

  /** Appends that `by` took `action` on `paymentId`, with its result. */
  async add(paymentId: string, action: string, by: { id: string; name: string }, result: string): Promise<void> {
    const at = new Date(this.now()).toISOString();
    const entries = [...(await this.list(paymentId)), { action, by: by.id, name: by.name, at, result }];
    await this.client.store.saveBinding(
      historyKey(this.client.name, paymentId),
      {
        paymentId,
        amount: '0',
        developerTrackingId: JSON.stringify(entries.slice(-DESK_HISTORY_SIZE)),
        createdAt: at,
      },
      this.retentionMs,
    );
  }
}
