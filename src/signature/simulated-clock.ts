import type { SignatureScheme } from './types.js';

/**
 * The header a simulator on a manual clock adds to each delivery: its simulated time in ms since the epoch. It is
 * not signed, so only a receiver in the test-only mode (`withSimulatedClock`, or `PAYHOOKS_TEST_SIMULATED_CLOCK=true`
 * for `payhooks serve`) reads it.
 */
export const SIMULATED_TIME_HEADER = 'x-payhooks-simulated-time';

/**
 * TEST ONLY. Wraps a scheme so that its timestamp tolerance is measured against a simulator's time rather than the
 * machine's: `now()` when given (e.g. `() => simulator.clock.now()` in the same process), else the
 * `x-payhooks-simulated-time` header of the delivery (a simulator on a manual clock sends it). A delivery signed
 * three simulated days later then verifies, as it would have on the service's real schedule. The signature itself
 * is checked as before. Never use it in production: anyone can send that header, which turns the replay defence off.
 *
 * @example
 * const simulator = await startSimulator({ clock: 'manual' });
 * const hooks = createPayhooks({ scheme: withSimulatedClock(createDefaultScheme({ secrets: [secret] })), database });
 */
export function withSimulatedClock(scheme: SignatureScheme, now?: () => number | Date): SignatureScheme {
  return {
    name: scheme.name,
    headerNames: scheme.headerNames,
    sign: (input) => scheme.sign(input),
    verify(input) {
      if (now) return scheme.verify({ ...input, now: now() });
      const value = input.headers[SIMULATED_TIME_HEADER];
      const text = typeof value === 'string' ? value : value?.[0];
      const simulated = text !== undefined && /^\d{1,15}$/.test(text) ? Number(text) : undefined;
      return scheme.verify(simulated === undefined ? input : { ...input, now: simulated });
    },
  };
}
