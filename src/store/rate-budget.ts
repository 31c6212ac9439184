import { sleep } from '../internal/sleep.js';
import type { PayhooksDatabase } from './database.js';

/** The `api_rate_budget` table of migrations/002_api_rate_budget.sql. */
export interface ApiRateBudgetTable {
  budget: string;
  window_start: Date | string;
  used: number;
}

/** Options of {@link createPostgresRateLimiter}. */
export interface PostgresRateLimiterOptions {
  /** Requests all processes together may send per window. Default 1000 (the service's limit per minute). */
  requestsPerWindow?: number | undefined;
  /** Length of each fixed window. Default 60000 ms. */
  windowMs?: number | undefined;
  /** Name of the budget, so that clients behind different IP addresses can keep separate ones. Default `default`. */
  budget?: string | undefined;
  /**
   * Called with the time (`Date.now()`) of each grant, the moment `acquire` lets a request go; it lies inside the
   * window the request was counted in. For metrics and tests.
   */
  onGrant?: ((grantedAt: number) => void) | undefined;
}

/**
 * A request budget kept in the payhooks database. Its shape is the API client's `RateLimiter` (the store
 * layer does not import the client; the types match structurally).
 */
export interface PostgresRateLimiter {
  acquire(signal?: AbortSignal): Promise<void>;
}

/**
 * Takes one request from the budget of the window starting at `windowStart`: one atomic upsert that adds 1
 * only while `used` is under the limit. Returns the new count, or undefined when the window is spent.
 */
export async function takeFromBudget(
  store: PayhooksDatabase,
  budget: string,
  windowStart: Date,
  limit: number,
): Promise<number | undefined> {
  const row = await store.db
    .withTables<{ api_rate_budget: ApiRateBudgetTable }>()
    .insertInto('api_rate_budget')
    .values({ budget, window_start: windowStart, used: 1 })
    // Built with the query builder rather than kysely's `sql` tag: this module is part of `payhooks/client`
    // (createPostgresRateLimiter), which must not load kysely itself; the store it is given already has.
    .onConflict((conflict) =>
      conflict
        .columns(['budget', 'window_start'])
        .doUpdateSet((eb) => ({ used: eb('api_rate_budget.used', '+', 1) }))
        .where('api_rate_budget.used', '<', limit),
    )
    .returning('used')
    .executeTakeFirst();
  return row?.used;
}

/** Deletes the rows of windows that ended before `before`. */
export async function deleteSpentWindows(store: PayhooksDatabase, budget: string, before: Date): Promise<void> {
  await store.db
    .withTables<{ api_rate_budget: ApiRateBudgetTable }>()
    .deleteFrom('api_rate_budget')
    .where('budget', '=', budget)
    .where('window_start', '<', before)
    .execute();
}

/**
 * One request budget shared by every process on the same payhooks database (the Postgres the workers
 * already coordinate through): pass it as the API client's `rateLimit`. Windows are fixed and aligned to
 * the epoch on each process's clock (keep clocks in sync with NTP). When a window is spent, `acquire` waits
 * for the next one. Needs migration 002 (`migrate(store)` applies it).
 *
 * @example
 * const store = await openDatabase({ url: process.env.DATABASE_URL });
 * await migrate(store);
 * const client = createClient({ apiKey, environment: 'production', rateLimit: createPostgresRateLimiter(store) });
 */
export function createPostgresRateLimiter(store: PayhooksDatabase, options: PostgresRateLimiterOptions = {}): PostgresRateLimiter {
  const limit = options.requestsPerWindow ?? 1000;
  const windowMs = options.windowMs ?? 60_000;
  const budget = options.budget ?? 'default';
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError('requestsPerWindow must be a positive integer.');
  if (!Number.isInteger(windowMs) || windowMs < 1) throw new RangeError('windowMs must be a positive whole number of milliseconds.');

  return {
    async acquire(signal) {
      for (;;) {
        signal?.throwIfAborted();
        const now = Date.now();
        const windowStart = now - (now % windowMs);
        const used = await takeFromBudget(store, budget, new Date(windowStart), limit);
        if (used !== undefined) {
          // The first request of a window clears old ones, so the table stays a few rows long without a job.
          if (used === 1) await deleteSpentWindows(store, budget, new Date(windowStart - windowMs));
          // The grant is this moment, and it must fall in the window the unit was counted in: a unit that came back
          // after its window ended (a slow database, a loaded machine) stays spent, and a request sent on it would sit
          // on top of the next window's own budget. Whatever the scheduling, take again, however often: a limit that
          // let a late unit go "just once" put 18 requests in a window of 10 on a loaded machine.
          const grantedAt = Date.now();
          if (grantedAt < windowStart + windowMs) {
            options.onGrant?.(grantedAt);
            return;
          }
          continue;
        }
        // A little jitter, so that the waiting processes do not all hit the database at the same instant.
        const jitter = Math.random() * Math.min(50, windowMs / 20);
        await sleep(windowStart + windowMs - Date.now() + jitter, signal);
      }
    },
  };
}
