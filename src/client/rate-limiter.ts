import { API_RATE_LIMIT_PER_MINUTE } from '../events/rest-contract.js';
import { sleep } from '../internal/sleep.js';

/**
 * A request budget. The client calls `acquire` before every HTTP attempt, retries included, and sends the
 * request when it resolves. It rejects with the signal's reason when the caller aborts while waiting.
 * `createRateLimiter` keeps the budget in this process; `createPostgresRateLimiter` shares one budget among
 * all processes using the same payhooks database.
 */
export interface RateLimiter {
  acquire(signal?: AbortSignal): Promise<void>;
}

/** Options of {@link createRateLimiter}. */
export interface RateLimiterOptions {
  /** Requests allowed in any window of `windowMs`. Default 1000 (the service's limit). */
  requestsPerWindow?: number | undefined;
  /** Length of the window. Default 60000 ms. */
  windowMs?: number | undefined;
  /** Called with the time (`Date.now()`) of each grant, as the window counts it. For metrics and tests. */
  onGrant?: ((grantedAt: number) => void) | undefined;
}

/**
 * An in-process limiter over a sliding window: no span of `windowMs` ever holds more than
 * `requestsPerWindow` requests. Waiters are served in order. Share one instance between clients of the same
 * process to give them one budget.
 *
 * @example
 * const limiter = createRateLimiter({ requestsPerWindow: 500 }); // two processes, half the limit each
 * const client = createClient({ apiKey, environment: 'production', rateLimit: limiter });
 */
export function createRateLimiter(options: RateLimiterOptions = {}): RateLimiter {
  const limit = options.requestsPerWindow ?? API_RATE_LIMIT_PER_MINUTE;
  const windowMs = options.windowMs ?? 60_000;
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError('requestsPerWindow must be a positive integer.');
  if (!Number.isFinite(windowMs) || windowMs <= 0) throw new RangeError('windowMs must be a positive number of milliseconds.');

  // Start times of the requests still inside the window, oldest first.
  const started: number[] = [];
  let queue: Promise<void> = Promise.resolve();

  async function take(signal: AbortSignal | undefined): Promise<void> {
    for (;;) {
      signal?.throwIfAborted();
      const now = Date.now();
      while (started.length > 0 && started[0]! <= now - windowMs) started.shift();
      if (started.length < limit) {
        started.push(now);
        options.onGrant?.(now);
        return;
      }
      await sleep(started[0]! + windowMs - now, signal);
    }
  }

  return {
    acquire(signal) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      const turn = queue.then(() => take(signal));
      queue = turn.catch(() => undefined);
      if (!signal) return turn;
      // A waiter further back in the queue must not wait for its turn to learn that it was aborted.
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
        turn.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
      });
    },
  };
}

/** A limiter that never waits, for `rateLimit: false`. */
export const unlimited: RateLimiter = { acquire: async () => undefined };
