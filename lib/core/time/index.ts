// What the other folders of the core may import from time/ (the clock every age, due time and wait reads).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of time/ to this file.
export { every, monotonicNow, sleep, SYSTEM_CLOCK } from './clock.port.js';
export type { Clock, ClockTimer } from './clock.port.js';
export { SharedClock, type SharedMark } from './shared.clock.js';
