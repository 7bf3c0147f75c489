import { describe, type PaymentsLogger } from '../common/index.js';
import {
  bucketStart,
  TALLY,
  type OutcomeSource,
  type PaymentStoryLog,
  type StoryBatch,
  type StoryEntry,
  type StoryKind,
  type StoryTally,
} from '../store/index.js';
import type { TelemetryHooks, WebhookTrace } from '../telemetry/index.js';
import type { Clock } from '../time/index.js';
import type { FinalOutcome } from './settlement.decision.js';
import type { SettleRequest, SettleResult, Settlements } from './settlement.request.js';

/** What one settle adds to a payment's story and to the tallies. */
export interface SettleStory {
  /** The story's entries, in order (kind, answer, error). */
  entries: Array<Pick<StoryEntry, 'kind' | 'answer' | 'error'>>;
  /** The tallies it adds (the handling time's slot is added by the recorder, which timed it). */
  tallies: readonly StoryTally[];
  /** Whether the payment's handlers ran to the end of a paid outcome (its time is then charted). */
  paidHandled: boolean;
}

const VERIFY: StoryTally = Object.freeze({ name: TALLY.verifySettled, by: 1 });

/** The outcomes a settled payment is counted under. */
type SettledOutcome = FinalOutcome;

// Built once: a settle's tallies are the same few values for every payment of an outcome, and
// nothing downstream changes them (the recorder sums them into its own records).
const SETTLED: Readonly<Record<SettledOutcome, readonly StoryTally[]>> = Object.freeze({
  confirmed: settledTallies('confirmed'),
  failed: settledTallies('failed'),
  expired: settledTallies('expired'),
  authorized: settledTallies('authorized'),
  mismatch: settledTallies('mismatch'),
  duplicate: settledTallies('duplicate'),
});
const ONLY_VERIFY: readonly StoryTally[] = Object.freeze([VERIFY]);
const NO_TALLIES: readonly StoryTally[] = Object.freeze([]);
const STRANGER: readonly StoryTally[] = Object.freeze([Object.freeze({ name: TALLY.verifyStranger, by: 1 })]);

function settledTallies(outcome: SettledOutcome): readonly StoryTally[] {
  return Object.freeze([
    VERIFY,
    Object.freeze({ name: TALLY.settled, by: 1 }),
    Object.freeze({ name: TALLY.outcome(outcome), by: 1 }),
  ]);
}

/**
 * What a settle's result tells a payment's story, and which tallies it adds. Exhaustive: a new
 * kind of result must say here what it tells, or the compiler refuses it. A settle that verified
 * made one verify call (the runner verifies once per settle).
 */
export function storyOfSettle(result: SettleResult): SettleStory {
  switch (result.kind) {
    case 'handled':
      return {
        entries: [
          { kind: 'verify', answer: result.verification.status },
          { kind: 'handlers', answer: `${result.outcome}: handled` },
        ],
        tallies: SETTLED[result.outcome],
        paidHandled: result.outcome === 'confirmed',
      };
    case 'handlers-failed':
      return {
        entries: [
          { kind: 'verify', answer: result.verification.status },
          { kind: 'handlers', answer: `${result.outcome}: failed`, error: result.error },
        ],
        tallies: ONLY_VERIFY,
        paidHandled: false,
      };
    case 'order-duplicate': {
      const entries: SettleStory['entries'] = [
        { kind: 'verify', answer: result.verification.status },
        { kind: 'duplicate', answer: `duplicate of ${result.settledBy.paymentId}` },
      ];
      if (result.refund !== undefined)
        entries.push({
          kind: 'refund',
          answer: `refund ${result.refund.refundId}, ${result.refund.amount}, ${result.refund.status}`,
        });
      else if (result.refundRetry !== undefined)
        entries.push({ kind: 'refund', answer: 'not sent yet', error: result.refundRetry });
      if (result.error !== undefined)
        entries.push({ kind: 'handlers', answer: 'duplicate: failed', error: result.error });
      return { entries, tallies: SETTLED.duplicate, paidHandled: false };
    }
    case 'pending':
      return {
        entries: [{ kind: 'verify', answer: result.verification.status }],
        tallies: ONLY_VERIFY,
        paidHandled: false,
      };
    case 'mismatch':
      return {
        entries: [{ kind: 'verify', answer: result.verification.status, error: result.problems.join('; ') }],
        tallies: SETTLED.mismatch,
        paidHandled: false,
      };
    case 'foreign':
      return {
        entries: [
          { kind: 'verify', answer: result.verification?.status ?? 'unknown', error: result.problems.join('; ') },
        ],
        tallies: STRANGER,
        paidHandled: false,
      };
    case 'verify-failed':
      return {
        entries: [{ kind: 'verify', answer: 'failed', error: `${result.error.code}: ${result.error.message}` }],
        tallies: ONLY_VERIFY,
        paidHandled: false,
      };
    case 'store-unavailable':
      return {
        entries: [{ kind: 'verify', answer: 'store unavailable', error: result.error }],
        tallies: NO_TALLIES,
        paidHandled: false,
      };
    case 'deferred':
      return {
        entries: [
          { kind: 'verify', answer: `deferred ${String(result.retryAfterSecs)} s`, error: result.error?.message },
        ],
        tallies: NO_TALLIES,
        paidHandled: false,
      };
    case 'rate-limited':
      return {
        entries: [{ kind: 'verify', answer: `rate-limited ${String(result.retryAfterSecs)} s` }],
        tallies: NO_TALLIES,
        paidHandled: false,
      };
    case 'duplicate':
    case 'busy':
      return { entries: [], tallies: NO_TALLIES, paidHandled: false };
  }
}

/** What the recorder needs of the client. */
export interface StoryRecorderOptions {
  /** The registration's name (`''` for the unnamed one). */
  registration: string;
  /** This instance's name in the story (host name and process id). */
  instance: string;
  /** The engine's clock. */
  clock: Clock;
  /** Cuts the client's secrets out of a text (the client's transport): every string is written through it. */
  redactor: { redact(text: string): string };
  /** Where a failed write is said (once per failure streak). */
  logger: PaymentsLogger;
}

/**
 * How long notes wait to be written together: a store write per batch, not per payment, and the
 * tallies of a batch summed (one increment per counter and bucket). A person reading a story waits
 * longer than this; the desk writes its own instance's notes before it reads.
 */
const STORY_BATCH_MS = 25;
/** A batch this large is written at once, whatever its age (bounds a write's size and the memory). */
const STORY_BATCH_MAX = 500;
/** Most texts the recorder remembers as clean (ids of the payments in flight, the answers). */
const CLEAN_TEXTS_MAX = 1024;
/** 10000-01-01T00:00:00Z: from then on toISOString writes a six-digit year with its sign. */
const ISO_FOUR_DIGIT_YEARS_END = 253_402_300_800_000;

/**
 * Notes what happens to payments and writes it to the store's {@link PaymentStoryLog}, batched: the
 * notes of {@link STORY_BATCH_MS} go in one write, never awaited by the path that noted them.
 * Best-effort by design: the story is for people; a failed write loses lines and counts, never
 * money-relevant state, and the paths that settle payments never wait for it.
 */
export class StoryRecorder {
  #entries: StoryEntry[] = [];
  /**
   * The batch's tallies summed, by bucket then name (a batch's tallies nearly always share one
   * bucket: no key is built per count).
   */
  readonly #tallies = new Map<number, Map<string, StoryTally & { bucket: number }>>();
  /** How many tallies the batch holds (over every bucket). */
  #tallyCount = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #failing = false;
  #writing: Promise<void> = Promise.resolve();
  /**
   * Texts the redactor left as they were: one settle notes its payment's id three times and the
   * same few answers over and over, and a redaction is a scan for the secrets' forms and runs. The
   * redactor is a pure function of the text, so a text found clean is not scanned again (one it
   * changed is never kept). Cleared once it holds {@link CLEAN_TEXTS_MAX} texts.
   */
  readonly #clean = new Set<string>();
  /** The last time written as an ISO string, and that string (notes of one ms share it). */
  #isoAt = Number.NaN;
  #iso = '';
  /** The start of the second last formatted, and its ISO string up to the milliseconds (`…T10:20:30.`). */
  #secondAt = Number.NaN;
  #secondIso = '';

  /**
   * @param log the store's story log
   * @param options who writes, on which clock, through which redactor
   */
  constructor(
    private readonly log: PaymentStoryLog,
    private readonly options: StoryRecorderOptions,
  ) {}

  /** The clock's time now, epoch ms. */
  now(): number {
    return this.options.clock.now();
  }

  /** Notes an entry of `paymentId`'s story, at `at` (default now). */
  note(paymentId: string, source: string, kind: StoryKind, answer: string, error?: string, at = this.now()): void {
    const entry: StoryEntry = {
      paymentId: this.#redact(paymentId),
      at: this.#isoOf(at),
      instance: this.options.instance,
      source,
      kind,
      answer: this.#redact(answer),
    };
    if (error !== undefined) entry.error = this.options.redactor.redact(error);
    this.#entries.push(entry);
    this.#schedule();
  }

  // Ids and answers are short and repeat; an error is free text, redacted as it comes.
  #redact(text: string): string {
    if (this.#clean.has(text)) return text;
    const redacted = this.options.redactor.redact(text);
    if (redacted === text) {
      if (this.#clean.size >= CLEAN_TEXTS_MAX) this.#clean.clear();
      this.#clean.add(text);
    }
    return redacted;
  }

  // Notes come in bursts of one second: its date and time are formatted once, and each ms only
  // adds its three digits (what toISOString writes, for the years 0 to 9999 it writes as four digits).
  #isoOf(at: number): string {
    if (at === this.#isoAt) return this.#iso;
    if (!(Number.isInteger(at) && at >= 0 && at < ISO_FOUR_DIGIT_YEARS_END)) {
      this.#iso = new Date(at).toISOString();
    } else {
      const ms = at % 1000;
      const second = at - ms;
      if (second !== this.#secondAt) {
        this.#secondIso = new Date(second).toISOString().slice(0, 20);
        this.#secondAt = second;
      }
      this.#iso = this.#secondIso + (ms < 10 ? '00' : ms < 100 ? '0' : '') + String(ms) + 'Z';
    }
    this.#isoAt = at;
    return this.#iso;
  }

  /** Counts `tally` in the bucket of `at` (default now). */
  count(tally: StoryTally, at = this.now()): void {
    const bucket = bucketStart(at, this.log.limits.bucketMs);
    let byName = this.#tallies.get(bucket);
    if (byName === undefined) this.#tallies.set(bucket, (byName = new Map<string, StoryTally & { bucket: number }>()));
    const summed = byName.get(tally.name);
    if (summed === undefined) {
      byName.set(tally.name, { name: tally.name, by: tally.by, bucket });
      this.#tallyCount++;
    } else summed.by += tally.by;
    this.#schedule();
  }

  /** Writes what is noted now, and waits for every write started so far. */
  flush(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const entries = this.#entries;
    const tallies: StoryBatch['tallies'] = [];
    for (const byName of this.#tallies.values()) for (const summed of byName.values()) tallies.push(summed);
    this.#entries = [];
    this.#tallies.clear();
    this.#tallyCount = 0;
    if (entries.length > 0 || tallies.length > 0) {
      const batch = { registration: this.options.registration, entries, tallies };
      this.#writing = this.#writing.then(() =>
        this.log.append(batch).then(
          () => {
            this.#failing = false;
          },
          (error: unknown) => {
            if (!this.#failing)
              this.options.logger.warn(
                this.options.redactor.redact(
                  `payments: the story of payments was not written (best-effort): ${describe(error)}`,
                ),
              );
            this.#failing = true;
          },
        ),
      );
    }
    return this.#writing;
  }

  /** The webhook's telemetry, with each delivery's answer noted too. */
  webhookHooks(inner: TelemetryHooks): TelemetryHooks {
    return {
      active: true,
      call: (operation, method, template, run) => inner.call(operation, method, template, run),
      settle: (paymentId, source, run, summary) => inner.settle(paymentId, source, run, summary),
      reconciliation: (run) => inner.reconciliation(run),
      close: () => inner.close(),
      webhook: (route): WebhookTrace => new StoryWebhookTrace(this, inner.active ? inner.webhook(route) : undefined),
    };
  }

  #schedule(): void {
    if (this.#entries.length + this.#tallyCount >= STORY_BATCH_MAX) void this.flush();
    // Real time, not the engine's clock: a batching delay of the write, not a time the rules read
    // (a test's stopped clock must not hold the notes back).
    else this.#timer ??= setTimeout(() => void this.flush(), STORY_BATCH_MS);
  }
}

/** A delivery's trace with its answer noted: one object per delivery, no closures. */
class StoryWebhookTrace implements WebhookTrace {
  /**
   * @param story where the answer is noted
   * @param trace the telemetry's own trace of the delivery, when telemetry is on
   */
  constructor(
    private readonly story: StoryRecorder,
    private readonly trace: WebhookTrace | undefined,
  ) {}

  within<T>(run: () => Promise<T>): Promise<T> {
    return this.trace ? this.trace.within(run) : run();
  }

  end(status: number, result: string, paymentId?: string): void {
    this.trace?.end(status, result, paymentId);
    if (paymentId !== undefined) this.story.note(paymentId, 'webhook', 'webhook', `${String(status)} ${result}`);
    else if (result === 'rejected') this.story.count(REFUSED);
  }
}

const REFUSED: StoryTally = Object.freeze({ name: TALLY.refused, by: 1 });

/**
 * The settlements with each settle's story noted: what the service said, what the handlers did,
 * a duplicate and its refund, and the time from the start of the attempt that found the payment
 * paid to the end of its handlers (the charts' handling time).
 */
export class StorySettlements implements Settlements {
  /**
   * @param inner what settles
   * @param story where the notes go
   */
  constructor(
    private readonly inner: Settlements,
    private readonly story: StoryRecorder,
  ) {}

  /** @inheritdoc */
  async settle(request: SettleRequest): Promise<SettleResult> {
    const started = this.story.now();
    const result = await this.inner.settle(request);
    const told = storyOfSettle(result);
    const source: OutcomeSource = request.source;
    if (source === 'return')
      this.story.note(request.paymentId, source, 'return', 'customer came back', undefined, started);
    // The verify call is made as the settle starts; what follows it, as it ends.
    for (const entry of told.entries)
      this.story.note(
        request.paymentId,
        source,
        entry.kind,
        entry.answer,
        entry.error,
        entry.kind === 'verify' ? started : undefined,
      );
    for (const tally of told.tallies) this.story.count(tally);
    if (told.paidHandled) this.story.count({ name: TALLY.handled(this.story.now() - started), by: 1 });
    return result;
  }

  /** @inheritdoc */
  hold(paymentId: string, source: OutcomeSource, work: () => Promise<void>): Promise<'held' | 'done' | 'busy'> {
    return this.inner.hold(paymentId, source, work);
  }
}
