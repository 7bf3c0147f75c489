// Jest's order with the long files first. Jest runs the files that took longest last time first,
// but a fresh clone (CI) has no such record, and Jest then goes by file size: the simulation, a
// short file that runs 2000 histories for two to four minutes, came last, and one worker ran it
// alone while the other had nothing left. These go first whatever Jest remembers.
const Sequencer = require('@jest/test-sequencer').default;

const LONG_FIRST = [
  'test/simulation/simulation.spec.ts',
  'test/transactional/crash.e2e-spec.ts',
  'test/sample-app/crash.e2e-spec.ts',
  'test/postgres/pglite-store.spec.ts',
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
