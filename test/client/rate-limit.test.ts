import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient, createRateLimiter, type RateLimiter } from '../../src/client/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { createPostgresRateLimiter } from '../../src/store/rate-budget.js';
import { pgUrl } from '../helpers/pg.js';
import { backends, dispose } from '../helpers/stores.js';
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

/** Waits until just after the next window boundary, so that no burst straddles one by accident. */
async function alignToWindow(windowMs: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, windowMs - (Date.now() % windowMs) + 15));
}

describe('in-process rate limiter', () => {
  it('two clients sharing one limiter of 5 per 500 ms never send more than 5 requests in any 500 ms', async () => {
    server().route('GET', '/v1/invoices/:id', { json: invoice });
    const granted: number[] = [];
    const inner = createRateLimiter({ requestsPerWindow: 5, windowMs: 500 });
    const limiter: RateLimiter = {
      acquire: async (signal) => {
        await inner.acquire(signal);
        granted.push(Date.now());
      },
    };
    // When each request is handed to fetch: the limiter's promise, not the server's (loaded) clock.
    const sent: number[] = [];
    const stampingFetch: typeof fetch = (input, init) => {
      sent.push(Date.now());
      return fetch(input, init);
    };
    const [a, b] = [clientWith(limiter, stampingFetch), clientWith(limiter, stampingFetch)];
    const started = Date.now();
    await Promise.all([
      ...Array.from({ length: 6 }, () => a.invoices.get('inv_1')),
      ...Array.from({ length: 6 }, () => b.invoices.get('inv_1')),
    ]);
    expect(granted).toHaveLength(12);
    expect(sent).toHaveLength(12);
    expect(server().requests).toHaveLength(12);
    // Stamps land a few ticks after the limiter's own, and a loaded machine stretches ticks: 400 ms spans
    // keep slack for that, while a limiter that let all 12 through at once would put them in one span.
    expect(busiestSpan(granted, 400)).toBeLessThanOrEqual(5);
    expect(busiestSpan(sent, 400)).toBeLessThanOrEqual(5);
    expect(busiestSpan(granted, 1000)).toBeGreaterThan(5);
    expect(Date.now() - started).toBeGreaterThanOrEqual(950);
  });

  it('is taken before every attempt, retries included', async () => {
    const retryNow = { status: 429, headers: { 'retry-after': '0' }, json: { error: { message: 'again' } } };
    server().queue(retryNow, retryNow, { json: invoice });
    const limiter = createRateLimiter({ requestsPerWindow: 2, windowMs: 500 });
    await clientWith(limiter).invoices.get('inv_1');
    const [first, second, third] = server().requests.map((r) => r.at);
    expect(second! - first!).toBeLessThan(300);
    expect(third! - first!).toBeGreaterThanOrEqual(480);
  });

  it('lets an aborted waiter go at once without using the budget', async () => {
    server().route('GET', '/v1/invoices/:id', { json: invoice });
    const limiter = createRateLimiter({ requestsPerWindow: 1, windowMs: 400 });
    const client = clientWith(limiter);
    await client.invoices.get('inv_1');
    const controller = new AbortController();
    const waiting = client.invoices.get('inv_1', { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('gave up')), 50);
    const startedWaiting = Date.now();
    await expect(waiting).rejects.toThrow('gave up');
    expect(Date.now() - startedWaiting).toBeLessThan(300);
    await client.invoices.get('inv_1');
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
    async () => {
      const store = await backend.open();
      opened.push(store);
      // The real server gets a second pool, as a second process would have; PGlite has one connection to share.
      const other = backend.name === 'postgres' ? await openDatabase({ url: pgUrl!, schema: store.schema }) : store;
      if (other !== store) opened.push(other);
      server().route('GET', '/v1/invoices/:id', { json: invoice });
      const windowMs = 500;
      // When each request is handed to fetch: what the limiter governs. The server's arrival times add the loopback
      // and a loaded event loop, which can carry a request sent at the end of a window into the next one.
      const sent: number[] = [];
      const stampingFetch: typeof fetch = (input, init) => {
        sent.push(Date.now());
        return fetch(input, init);
      };
      const a = clientWith(createPostgresRateLimiter(store, { requestsPerWindow: 10, windowMs }), stampingFetch);
      const b = clientWith(createPostgresRateLimiter(other, { requestsPerWindow: 10, windowMs }), stampingFetch);

      await alignToWindow(windowMs);
      await Promise.all([
        ...Array.from({ length: 15 }, () => a.invoices.get('inv_1')),
        ...Array.from({ length: 15 }, () => b.invoices.get('inv_1')),
      ]);

      expect(server().requests).toHaveLength(30);
      expect(sent).toHaveLength(30);
      const counts = perWindow(sent, windowMs);
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
  it('takes a unit from the next window once when the first came back late, then lets the request go', async () => {
    const store = (await backends.find((b) => b.name === 'postgres')!.open()) as PayhooksDatabase;
    try {
      // Every take of the budget sleeps 30 ms and is counted: longer than the 10 ms window, so each unit comes back
      // after its window ended. Without a bound the limiter would take unit after unit and never return.
      const takes = sql.id(store.schema, 'budget_takes');
      const slow = sql.id(store.schema, 'slow_budget');
      await sql`create table ${takes} (at timestamptz default now())`.execute(store.db);
      await sql`create function ${slow}() returns trigger language plpgsql as $$
                  begin perform pg_sleep(0.03); insert into ${takes} default values; return new; end $$`.execute(store.db);
      await sql`create trigger slow before insert or update on ${sql.id(store.schema, 'api_rate_budget')}
                  for each row execute function ${slow}()`.execute(store.db);
      const limiter = createPostgresRateLimiter(store, { requestsPerWindow: 5, windowMs: 10 });
      await limiter.acquire();
      const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${takes}`.execute(store.db);
      expect(rows[0]!.n).toBe(2);
    } finally {
      await dispose(store);
    }
  });
});
