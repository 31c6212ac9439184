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
      // A unit that came back after its window ended is given up once; a database slower than a whole window would
      // otherwise never let the request go.
      let retook = false;
      for (;;) {
        signal?.throwIfAborted();
        const now = Date.now();
        const windowStart = now - (now % windowMs);
        const used = await takeFromBudget(store, budget, new Date(windowStart), limit);
        if (used !== undefined) {
          // The first request of a window clears old ones, so the table stays a few rows long without a job.
          if (used === 1) await deleteSpentWindows(store, budget, new Date(windowStart - windowMs));
          // The window ended while the statements ran (a slow database, a loaded machine): a request sent now would
          // arrive in the next window on top of that window's own budget. The slot is left spent; take one from the next.
          if (retook || Date.now() < windowStart + windowMs) return;
          retook = true;
          continue;
        }
        // A little jitter, so that the waiting processes do not all hit the database at the same instant.
        const jitter = Math.random() * Math.min(50, windowMs / 20);
        await sleep(windowStart + windowMs - Date.now() + jitter, signal);
      }
    },
  };
}
