// A Jest reporter for CI (.ci/run passes it with --reporters): it creates the file named by
// JEST_TAIL_FILE once every test file but one has finished, i.e. when one worker is left with the
// last file and the other core is idle. .ci/platforms.sh starts the Medusa harness's tests then, at
// its lower priority, instead of waiting for the very end of the run.
const { writeFileSync } = require('node:fs');

class JestTailReporter {
  #total = 0;
  #finished = 0;
  #signalled = false;

  onRunStart(results) {
    this.#total = results.numTotalTestSuites;
  }

  onTestFileResult() {
    this.#finished += 1;
    this.#signal();
  }

  onRunComplete() {
    this.#signal(true);
  }

  #signal(done = false) {
    const file = process.env.JEST_TAIL_FILE;
    if (this.#signalled || !file || (!done && this.#finished < this.#total - 1)) return;
    this.#signalled = true;
    writeFileSync(file, `${this.#finished} of ${this.#total} test files finished\n`);
  }

  getLastError() {
    return undefined;
  }
}

module.exports = JestTailReporter;
