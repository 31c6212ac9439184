// payhooks' one backoff: the worker's retries, the API client's, the worker process's restarts and the console's
// login throttle all space their waits with backoffDelay, so each keeps the schedule it documents.
import { describe, expect, it } from 'vitest';
import { requestRetryDelay } from '../../src/client/http-transport.js';
import { FAILURE_THROTTLE_DEFAULTS, FailureThrottle } from '../../src/console/failure-throttle.js';
import { backoffDelay, backoffProblems } from '../../src/internal/backoff.js';
import { WORKER_DEFAULTS } from '../../src/worker/defaults.js';
import { eventRetryDelay } from '../../src/worker/retry-delay.js';

const lowest = () => 0;
const highest = () => 0.999_999;

describe('backoffDelay', () => {
  it('doubles from the base after each failure, up to the cap, and waits nothing before the first', () => {
    const rule = { baseMs: 100, maxMs: 1000, jitter: false };
    expect([0, 1, 2, 3, 4, 5, 6].map((failures) => backoffDelay(failures, rule))).toEqual([0, 100, 200, 400, 800, 1000, 1000]);
  });

  it('draws a jittered delay from the upper half of the plain one', () => {
    const rule = { baseMs: 100, maxMs: 1000 };
    expect(backoffDelay(3, rule, lowest)).toBe(200);
    expect(backoffDelay(3, rule, highest)).toBeCloseTo(400, 0);
    expect(backoffDelay(3, rule, highest)).toBeLessThan(400);
  });

  it('stays at the cap after any number of failures (no overflow to Infinity or NaN)', () => {
    expect(backoffDelay(10_000, { baseMs: 1, maxMs: 5000, jitter: false })).toBe(5000);
  });

  it('names each unusable field: not positive, not finite, a cap below the base', () => {
    expect(backoffProblems({ baseMs: 1, maxMs: 2 })).toEqual([]);
    expect(backoffProblems({ baseMs: 0, maxMs: Number.POSITIVE_INFINITY }).map((p) => p.option)).toEqual(['baseMs', 'maxMs']);
    expect(backoffProblems({ baseMs: 10, maxMs: 5 })).toEqual([
      { option: 'maxMs', message: '(5) must not be shorter than baseMs (10): it caps every delay.' },
    ]);
  });
});

describe('each retry in payhooks keeps its schedule through backoffDelay', () => {
  it("the worker's event retries: from WORKER_DEFAULTS.backoff, jittered, rounded to whole ms", () => {
    expect(eventRetryDelay(1, {}, lowest)).toBe(WORKER_DEFAULTS.backoff.baseMs / 2);
    expect(eventRetryDelay(3, { baseMs: 10, maxMs: 1000 }, lowest)).toBe(20);
    expect(eventRetryDelay(30, {}, lowest)).toBe(WORKER_DEFAULTS.backoff.maxMs / 2);
  });

  it("the API client's request retries: 500 ms doubling to 8 s, from the upper half", () => {
    for (const [attempt, ceiling] of [
      [1, 500],
      [2, 1000],
      [5, 8000],
      [9, 8000],
    ] as const) {
      const delay = requestRetryDelay(attempt);
      expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
      expect(delay).toBeLessThan(ceiling);
    }
  });

  it("the console's throttle: free failures wait nothing, then the first delay doubles up to the cap", () => {
    const throttle = new FailureThrottle();
    const { freeFailures, firstDelayMs, maxDelayMs } = FAILURE_THROTTLE_DEFAULTS;
    const waits = Array.from({ length: freeFailures + 8 }, () => throttle.failed('10.0.0.1', 0));
    expect(waits.slice(0, freeFailures)).toEqual(Array(freeFailures).fill(0));
    expect(waits.slice(freeFailures, freeFailures + 3)).toEqual([firstDelayMs, firstDelayMs * 2, firstDelayMs * 4]);
    expect(waits.at(-1)).toBe(maxDelayMs);
  });
});
