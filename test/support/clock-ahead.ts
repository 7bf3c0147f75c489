import { jest } from '@jest/globals';

/**
 * Moves the system clock `ms` ahead for the code under test, wall time (`Date.now`) and monotonic
 * time (`performance.now`, which the engine measures durations on) alike: time passing, not a step
 * of the wall clock. `mockRestore()` brings both back.
 */
export function clockAhead(ms: number | (() => number)): { mockRestore(): void } {
  const by = typeof ms === 'number' ? () => ms : ms;
  const wall = Date.now();
  const monotonic = performance.now();
  const started = { wall, monotonic };
  const dateNow = jest.spyOn(Date, 'now').mockImplementation(() => started.wall + by());
  const perfNow = jest.spyOn(performance, 'now').mockImplementation(() => started.monotonic + by());
  return {
    mockRestore() {
      dateNow.mockRestore();
      perfNow.mockRestore();
    },
  };
}
