// A Jest environment that measures: per test file, the CPU of its worker and of the child processes
// it waited for (read from /proc, so Linux only), one JSON line each in $JEST_CPU_LOG. Not used by
// any npm script; docs/performance.md shows how to run it.
const { appendFileSync, readFileSync } = require('node:fs');
const environment = require('jest-environment-node');

const NodeEnvironment = environment.TestEnvironment ?? environment.default ?? environment;

/** CPU milliseconds of the children this process has waited for (cutime + cstime, 10 ms ticks). */
function childrenMs() {
  try {
    const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return 0;
  }
}

class CpuEnvironment extends NodeEnvironment {
  constructor(config, context) {
    super(config, context);
    this.testPath = context.testPath;
  }

  async setup() {
    this.started = Date.now();
    this.cpu = process.cpuUsage();
    this.children = childrenMs();
    await super.setup();
  }

  async teardown() {
    await super.teardown();
    const cpu = process.cpuUsage(this.cpu);
    const line = {
      path: this.testPath,
      wallMs: Date.now() - this.started,
      cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      childMs: childrenMs() - this.children,
    };
    appendFileSync(process.env.JEST_CPU_LOG ?? '/tmp/jest-cpu.jsonl', `${JSON.stringify(line)}\n`);
  }
}

module.exports = CpuEnvironment;
