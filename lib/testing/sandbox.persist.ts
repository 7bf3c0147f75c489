/**
 * The sandbox's memory kept in a state file (`PaymentsSandbox.start({ stateFile })`), so a
 * sandbox restarted on the same file still knows its payments: a shop that took payments before
 * a restart can still refund, capture or cancel them, as it can with the real service.
 *
 * Every change is written at once, to a temporary file then renamed over the state file: a
 * process killed at any moment leaves the previous state or the new one, never half of one.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  CHECKOUT_PATH,
  SandboxState,
  type NewPayment,
  type NewPreauthorization,
  type PaymentRecord,
  type Settlement,
} from './sandbox.state.js';
import type { SandboxBinding, SandboxBindingInput, SandboxPayment } from './sandbox.types.js';

/** What a state file holds. */
export interface SandboxStateFile {
  /** Its format; another value is refused rather than misread. */
  readonly version: 1;
  /** The last order number given. */
  readonly orderCounter: number;
  /** Every payment, oldest first. */
  readonly payments: readonly PaymentRecord[];
  /** Every customer's bindings. */
  readonly bindings: ReadonlyArray<readonly [string, readonly SandboxBinding[]]>;
}

/** Reads a state file: undefined when there is none yet. @throws Error when it is not one the sandbox wrote */
export function readStateFile(file: string): SandboxStateFile | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let parsed: Partial<SandboxStateFile> | undefined;
  try {
    parsed = JSON.parse(text) as Partial<SandboxStateFile>;
  } catch {
    parsed = undefined;
  }
  if (
    parsed?.version !== 1 ||
    !Array.isArray(parsed.payments) ||
    !Array.isArray(parsed.bindings) ||
    typeof parsed.orderCounter !== 'number'
  ) {
    throw new Error(
      `PaymentsSandbox: ${file} is not a state file of this sandbox (version 1); move it away to start afresh`,
    );
  }
  return parsed as SandboxStateFile;
}

/** {@link SandboxState} whose every change is saved to `file`, and which starts from it. */
export class PersistentSandboxState extends SandboxState {
  /**
   * @param file the state file (created with its folder on the first change)
   * @param now the sandbox clock, epoch ms
   * @param baseUrl returns the sandbox URL: checkout links of saved payments are given under it,
   *   since a restarted sandbox may listen on another port
   * @throws Error when the file is there but not a state file
   */
  constructor(
    private readonly file: string,
    now: () => number,
    private readonly currentUrl: () => string,
  ) {
    super(now, currentUrl);
    const saved = readStateFile(file);
    if (saved) {
      this.orderCounter = saved.orderCounter;
      for (const record of saved.payments) this.paymentsById.set(record.paymentId, { ...record });
      for (const [clientId, list] of saved.bindings)
        this.bindingsByClient.set(
          clientId,
          list.map((b) => Object.freeze({ ...b })),
        );
    }
  }

  override createPayment(input: NewPayment): SandboxPayment {
    return this.saved(super.createPayment(input));
  }

  override createPreauthorized(input: NewPreauthorization): SandboxPayment {
    return this.saved(super.createPreauthorized(input));
  }

  override settle(paymentId: string, outcome: Settlement): ReturnType<SandboxState['settle']> {
    return this.saved(super.settle(paymentId, outcome));
  }

  override refund(paymentId: string): SandboxPayment | undefined {
    return this.saved(super.refund(paymentId));
  }

  override cancel(paymentId: string): SandboxPayment | undefined {
    return this.saved(super.cancel(paymentId));
  }

  override capture(paymentId: string, amount: string | undefined): ReturnType<SandboxState['capture']> {
    return this.saved(super.capture(paymentId, amount));
  }

  override addBinding(input: SandboxBindingInput): SandboxBinding {
    return this.saved(super.addBinding(input));
  }

  override get(paymentId: string): SandboxPayment | undefined {
    const payment = super.get(paymentId);
    return payment && this.underCurrentUrl(payment);
  }

  override list(): SandboxPayment[] {
    return super.list().map((payment) => this.underCurrentUrl(payment));
  }

  /** A saved payment's checkout link, under the URL the sandbox listens on now. */
  private underCurrentUrl(payment: SandboxPayment): SandboxPayment {
    if (payment.link === undefined) return payment;
    const link = `${this.currentUrl()}${CHECKOUT_PATH}/${payment.paymentId}`;
    return link === payment.link ? payment : Object.freeze({ ...payment, link });
  }

  /** Writes the whole state (a refused change writes the same state again: harmless) and passes `result` on. */
  private saved<T>(result: T): T {
    const state: SandboxStateFile = {
      version: 1,
      orderCounter: this.orderCounter,
      payments: [...this.paymentsById.values()],
      bindings: [...this.bindingsByClient.entries()],
    };
    mkdirSync(dirname(this.file), { recursive: true });
    const temporary = `${this.file}.${process.pid}.tmp`;
    writeFileSync(temporary, JSON.stringify(state));
    renameSync(temporary, this.file);
    return result;
  }
}
