// Jest's order with the long files first. Jest runs the files that took longest last time first,
// but a fresh clone (CI) has no such record, and Jest then goes by file size: short files that run
// long came last (the simulation, 2000 histories in a few hundred bytes; the desk's browser files,
// which hold one line each of a shared helper's; the CommonJS build's telemetry check; the fleets),
// and one worker ran them alone while the other had nothing left. These go first whatever Jest
// remembers, longest first (CI's two workers; waiting files paired with busy ones), so that the
// many short files even out the two workers' ends.
const Sequencer = require('@jest/test-sequencer').default;

const LONG_FIRST = [
  'test/inbox/crash.e2e-spec.ts',
  'test/transactional/crash.e2e-spec.ts',
  'test/simulation/simulation.spec.ts',
  // Builds the shop (tsc) that sandbox-restart, last here, then reuses.
  'test/sample-app/crash.e2e-spec.ts',
  'test/package/telemetry-cjs.e2e-spec.ts',
  'test/simulation/simulation.stores.e2e-spec.ts',
  'test/faults/unpaid-fleet.e2e-spec.ts',
  'test/desk/desk.browser.e2e-spec.ts',
  'test/desk/desk.nest-browser.e2e-spec.ts',
  'test/faults/unpaid-returns.e2e-spec.ts',
  'test/postgres/pglite-store.spec.ts',
  'test/sample-app/sandbox-restart.e2e-spec.ts',
];

class LongFirstSequencer extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    const rank = (test) => {
      const i = LONG_FIRST.findIndex((suffix) => test.path.endsWith(suffix));
      return i === -1 ? LONG_FIRST.length : i;
    };
    // Array.prototype.sort is stable: the others keep Jest's order.
    return [...sorted].sort((a, b) => rank(a) - rank(b));
  }
}

module.exports = LongFirstSequencer;
