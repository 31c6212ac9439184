import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, createRateLimiter, type RateLimiter } from '../../src/client/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { createPostgresRateLimiter } from '../../src/store/rate-budget.js';
import { pgUrl } from '../helpers/pg.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';
import { API_KEY, invoice, useApiServer } from './support.js';

const { server } = useApiServer();

function clientWith(rateLimit: RateLimiter, fetchImpl?: typeof fetch) {
  return createClient({ apiKey: API_KEY, environment: server().url, rateLimit, fetch: fetchImpl });
}

/** The largest number of arrivals within any span shorter than `spanMs`. */
function busiestSpan(times: number[], spanMs: number): number {
  const sorted = [...times].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; j < sorted.length; j++) {
    while (sorted[j]! - sorted[i]! >= spanMs) i++;
    most = Math.max(most, j - i + 1);
  }
  return most;
}

/** Arrivals per fixed window, keyed by the window's index. */
function perWindow(times: number[], windowMs: number): number[] {
  const counts = new Map<number, number>();
  for (const at of times) counts.set(Math.floor(at / windowMs), (counts.get(Math.floor(at / windowMs)) ?? 0) + 1);
  return [...counts.values()];
}

describe('in-process rate limiter', () => {
  it('two clients sharing one limiter of 5 per 500 ms never get more than 5 grants in any 500 ms', async () => {
    server().route('GET', '/v1/invoices/:id', { json: invoice });
    // Counted by each grant's own time, as the limiter recorded it: a stamp the test takes after an await lands
    // wherever a loaded machine schedules it (a 6 in 400 ms from stamps once, with grants 500 ms apart).
    const granted: number[] = [];
    const limiter = createRateLimiter({ requestsPerWindow: 5, windowMs: 500, onGrant: (at) => granted.push(at) });
    const [a, b] = [clientWith(limiter), clientWith(limiter)];
    await Promise.all([
      ...Array.from({ length: 6 }, () => a.invoices.get('inv_1')),
      ...Array.from({ length: 6 }, () => b.invoices.get('inv_1')),
    ]);
    expect(granted).toHaveLength(12);
    expect(server().requests).toHaveLength(12);
    expect(busiestSpan(granted, 500)).toBe(5);
    // 12 grants at 5 per 500 ms need three windows' worth: the last grant is at least 1000 ms after the first.
    expect(Math.max(...granted) - Math.min(...granted)).toBeGreaterThanOrEqual(1000);
  });

  it('is taken before every attempt, retries included', async () => {
    const retryNow = { status: 429, headers: { 'retry-after': '0' }, json: { error: { message: 'again' } } };
    server().queue(retryNow, retryNow, { json: invoice });
    const granted: number[] = [];
    const limiter = createRateLimiter({ requestsPerWindow: 2, windowMs: 500, onGrant: (at) => granted.push(at) });
    await clientWith(limiter).invoices.get('inv_1');
    expect(server().requests).toHaveLength(3);
    // Three attempts, three grants; the third had to wait for the first to leave the window.
    expect(granted).toHaveLength(3);
    expect(granted[2]! - granted[0]!).toBeGreaterThanOrEqual(500);
  });

  it('lets an aborted waiter go at once without using the budget', async () => {
    server().route('GET', '/v1/invoices/:id', { json: invoice });
    // A minute's window: a waiter that is not let go when aborted would outlast the test's timeout.
    const limiter = createRateLimiter({ requestsPerWindow: 2, windowMs: 60_000 });
    const client = clientWith(limiter);
    await client.invoices.get('inv_1');
    await expect(client.invoices.get('inv_1', { signal: AbortSignal.abort(new Error('gave up early')) })).rejects.toThrow('gave up early');
    // The aborted request took nothing: the second unit is still there.
    await client.invoices.get('inv_1');
    const controller = new AbortController();
    const waiting = client.invoices.get('inv_1', { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('gave up')), 50);
    await expect(waiting).rejects.toThrow('gave up');
    expect(server().requests).toHaveLength(2);
  });
});

describe.each(backends)('Postgres-shared rate limiter on $name', (backend) => {
  const opened: PayhooksDatabase[] = [];
  afterEach(async () => {
    const [first, ...others] = opened.splice(0);
    for (const store of others) await store.close();
    if (first) await dispose(first);
  });

  it.skipIf(!backend.available)(
    'two clients with their own connections and a budget of 10 per 500 ms never exceed 10 per window',
    // 12 s on PGlite at load 25: room for a machine 3-4 times slower.
    { timeout: 90_000 },
    async () => {
      const store = await backend.open();
      opened.push(store);
      // The real server gets a second pool, as a second process would have; PGlite has one connection to share.
      const other = backend.name === 'postgres' ? await openDatabase({ url: pgUrl!, schema: store.schema }) : store;
      if (other !== store) opened.push(other);
      server().route('GET', '/v1/invoices/:id', { json: invoice });
      const windowMs = 500;
      // Each grant's own time, as the limiter let the request go: the property is that no window holds more than
      // 10 of them. A stamp taken by the test after an await says when this process was next scheduled, not that.
      const granted: number[] = [];
      const options = { requestsPerWindow: 10, windowMs, onGrant: (at: number) => granted.push(at) };
      // Every attempt takes a unit, retries included: a keep-alive connection the server closed while PGlite held the
      // event loop answers ECONNRESET, and the client sends that request again.
      let attempts = 0;
      const countingFetch: typeof fetch = (input, init) => {
        attempts++;
        return fetch(input, init);
      };
      const a = clientWith(createPostgresRateLimiter(store, options), countingFetch);
      const b = clientWith(createPostgresRateLimiter(other, options), countingFetch);

      await Promise.all([
        ...Array.from({ length: 15 }, () => a.invoices.get('inv_1')),
        ...Array.from({ length: 15 }, () => b.invoices.get('inv_1')),
      ]);

      expect(server().requests).toHaveLength(30);
      expect(attempts).toBeGreaterThanOrEqual(30);
      expect(granted).toHaveLength(attempts);
      const counts = perWindow(granted, windowMs);
      expect(Math.max(...counts)).toBeLessThanOrEqual(10);
      expect(counts.length).toBeGreaterThanOrEqual(3);
      const rows = await store.db
        .withTables<{ api_rate_budget: { budget: string; window_start: Date; used: number } }>()
        .selectFrom('api_rate_budget')
        .select('used')
        .execute();
      // Spent windows are cleared as new ones start: at most the current one and the one before remain.
      expect(rows.length).toBeLessThanOrEqual(2);
      expect(rows.every((row) => row.used <= 10)).toBe(true);
    },
  );
});

describe.skipIf(!pgUrl)('Postgres-shared rate limiter on a database slower than its window', () => {
  it('never lets a request go on a unit whose window ended while it was taken; it keeps taking until aborted', async () => {
    const store = (await backends.find((b) => b.name === 'postgres')!.open()) as PayhooksDatabase;
    try {
      // Every take of the budget sleeps 30 ms and is counted: longer than the 10 ms window, so each unit comes back
      // after its window ended, whatever the machine's speed. A request sent on one would land on top of a later
      // window's own budget.
      const takes = sql.id(store.schema, 'budget_takes');
      const slow = sql.id(store.schema, 'slow_budget');
      await sql`create table ${takes} (at timestamptz default now())`.execute(store.db);
      await sql`create function ${slow}() returns trigger language plpgsql as $$
                  begin perform pg_sleep(0.03); insert into ${takes} default values; return new; end $$`.execute(store.db);
      await sql`create trigger slow before insert or update on ${sql.id(store.schema, 'api_rate_budget')}
                  for each row execute function ${slow}()`.execute(store.db);
      const granted: number[] = [];
      const limiter = createPostgresRateLimiter(store, { requestsPerWindow: 5, windowMs: 10, onGrant: (at) => granted.push(at) });
      const controller = new AbortController();
      const acquiring = limiter.acquire(controller.signal);
      const outcome = acquiring.then(
        () => 'granted',
        (error: Error) => error.message,
      );
      const takeCount = async () => (await sql<{ n: number }>`select count(*)::int as n from ${takes}`.execute(store.db)).rows[0]!.n;
      // Three late units in a row: a limiter that lets one go "once" has returned by the second.
      let settled = false;
      void outcome.then(() => {
        settled = true;
      });
      await waitFor(async () => settled || (await takeCount()) >= 3, 'three takes of the budget');
      controller.abort(new Error('gave up'));
      expect(await outcome).toBe('gave up');
      expect(granted).toEqual([]);
    } finally {
      await dispose(store);
    }
  });
});
