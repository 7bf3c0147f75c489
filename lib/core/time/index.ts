// What the other folders of the core may import from time/ (the clock every age, due time and wait reads).
// Internal, not public API: the package's names are in lib/core/index.ts. Lint keeps the other
// folders' imports of time/ to this file.
export { every, monotonicNow, SharedClock, sleep, SYSTEM_CLOCK, within } from './time.clock.js';
export type { Clock, ClockTimer, SharedMark } from './time.clock.js';
