import { describe, expect, it } from '@jest/globals';
import { StoryRecorder } from '../../lib/core/settlement/index.js';
import { storyLimits, type PaymentStoryLog, type StoryBatch } from '../../lib/core/store/index.js';
import { SYSTEM_CLOCK } from '../../lib/core/time/index.js';

// The recorder's batching: what a story write costs the paths that note it. Notes of a few ms go in
// one write, a batch's tallies are summed per counter and bucket, a large batch is written at once,
// and flush() writes what is noted now (the desk calls it before it reads).

/** A story log that keeps the batches it is given. */
function recordingLog(): PaymentStoryLog & { batches: StoryBatch[] } {
  const batches: StoryBatch[] = [];
  return {
    batches,
    limits: storyLimits({}),
    append: async (batch) => void batches.push(batch),
    entries: async () => [],
    tallies: async () => [],
  };
}

function recorder(log: PaymentStoryLog): StoryRecorder {
  return new StoryRecorder(log, {
    registration: 'shop',
    instance: 'host-1',
    clock: SYSTEM_CLOCK,
    redactor: { redact: (text) => text.replaceAll('sk_secret', '[redacted]') },
    logger: { log() {}, warn() {}, error() {} },
  });
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('StoryRecorder', () => {
  it('writes the notes of a few ms in one batch, tallies summed per counter and bucket', async () => {
    const log = recordingLog();
    const story = recorder(log);
    const at = Date.UTC(2026, 10, 28, 10, 0, 0);
    story.note('pay_1', 'webhook', 'verify', 'PAID', undefined, at);
    await turn();
    story.note('pay_2', 'webhook', 'verify', 'PAID', 'sk_secret leaked', at);
    story.count({ name: 'verify.settled', by: 1 }, at);
    story.count({ name: 'verify.settled', by: 2 }, at + 1);
    story.count({ name: 'verify.settled', by: 1 }, at + 3_600_000);
    story.count({ name: 'refused', by: 1 }, at);
    // Across turns of the event loop: still one batch, not yet written.
    await turn();
    expect(log.batches).toEqual([]);
    await sleep(80);
    expect(log.batches).toHaveLength(1);
    const [batch] = log.batches;
    expect(batch.registration).toBe('shop');
    expect(batch.entries.map((e) => [e.paymentId, e.instance, e.error])).toEqual([
      ['pay_1', 'host-1', undefined],
      ['pay_2', 'host-1', '[redacted] leaked'],
    ]);
    const bucket = Math.floor(at / 3_600_000) * 3_600_000;
    expect(batch.tallies).toEqual(
      expect.arrayContaining([
        { name: 'verify.settled', by: 3, bucket },
        { name: 'verify.settled', by: 1, bucket: bucket + 3_600_000 },
        { name: 'refused', by: 1, bucket },
      ]),
    );
    expect(batch.tallies).toHaveLength(3);
  });

  it('writes at once what flush() is asked for, and a batch that reached its bound', async () => {
    const log = recordingLog();
    const story = recorder(log);
    story.note('pay_1', 'return', 'return', 'customer came back');
    await story.flush();
    expect(log.batches.map((b) => b.entries.length)).toEqual([1]);
    for (let i = 0; i < 500; i++) story.note(`pay_${i}`, 'webhook', 'webhook', '200 confirmed');
    await turn();
    expect(log.batches.map((b) => b.entries.length)).toEqual([1, 500]);
    // Nothing left over, nothing written twice.
    await sleep(80);
    expect(log.batches).toHaveLength(2);
  });

  it('dates each note as toISOString does, whatever the note before it', async () => {
    const log = recordingLog();
    const story = recorder(log);
    const second = Date.UTC(2026, 10, 28, 10, 20, 30);
    // Same second (each ms width), the next second, back again, the epoch, the last four-digit
    // year, past it (a six-digit year), before the epoch, and a fraction of a ms.
    const times = [
      second,
      second + 7,
      second + 42,
      second + 999,
      second + 1000,
      second + 5,
      second + 5,
      0,
      999,
      253_402_300_799_999,
      253_402_300_800_000,
      -1,
      -1500,
      second + 12.75,
    ];
    for (const at of times) story.note('pay_1', 'webhook', 'verify', 'PAID', undefined, at);
    await story.flush();
    expect(log.batches.flatMap((b) => b.entries.map((e) => e.at))).toEqual(
      times.map((at) => new Date(at).toISOString()),
    );
  });

  it('writes at once a batch whose tallies over several buckets reach the bound', async () => {
    const log = recordingLog();
    const story = recorder(log);
    const at = Date.UTC(2026, 10, 28, 10, 0, 0);
    for (let i = 0; i < 250; i++) {
      story.count({ name: `a.${i}`, by: 1 }, at);
      story.count({ name: `a.${i}`, by: 1 }, at + 3_600_000);
    }
    await turn();
    expect(log.batches.map((b) => b.tallies.length)).toEqual([500]);
  });
});
