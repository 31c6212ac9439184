import { performance } from 'node:perf_hooks';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApiClient, createClient } from '../../src/client/index.js';
import { PayhooksError } from '../../src/errors.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { createPostgresRateLimiter } from '../../src/store/rate-budget.js';
import {
  BackfillConflictError,
  type BackfillOptions,
  type BackfillProgress,
  parseResources,
  parseSince,
  runBackfill,
  sinceKey,
} from '../../src/sync/backfill.js';
import { customerFromEvent, STATE_RANK } from '../../src/sync/mirror/states.js';
import { writeMirrorState } from '../../src/sync/mirror/write.js';
import { actualMirror, expectedMirror } from '../helpers/mirror.js';
import { backends, dispose, emptyStore } from '../helpers/stores.js';

const COUNT = 1000;

/** Creates `count` customers, each with one invoice (1 to 3 items; every tenth marked paid), `concurrency` calls at a time. */
async function seed(simulator: Simulator, count: number, concurrency = 50): Promise<void> {
  const client = createClient({ apiKey: 'sk_test_seed', environment: simulator.url, rateLimit: false });
  for (let first = 0; first < count; first += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, count - first) }, (_, i) => first + i);
    await Promise.all(
      batch.map(async (n) => {
        const customer = await client.customers.create({
          username: `user${n}`,
          name: `Customer ${n}`,
          email: `user${n}@example.com`,
          phoneNumber: `+52550${String(n).padStart(7, '0')}`,
        });
        const invoice = await client.invoices.create({
          customerId: customer.id,
          dueDate: '2026-12-01T06:00:00Z',
          items: Array.from({ length: 1 + (n % 3) }, (_, item) => ({
            quantity: 1 + item,
            concept: { displayName: `Concept ${n}.${item}`, amount: 10_000 + n, currency: 'MXN' },
          })),
        });
        if (n % 10 === 0) await client.invoices.markPaid(invoice.id);
      }),
    );
  }
}

const silent = pino({ level: 'silent' });
let simulator: Simulator;

beforeAll(async () => {
  // Seeding makes 2,100 calls: far over the service's 1,000 a minute, which only backfill must respect.
  simulator = await startSimulator({ rateLimitPerMinute: 1_000_000, logger: silent });
  await seed(simulator, COUNT);
}, 60_000);

afterAll(async () => {
  await simulator?.close();
});

/** A client on the simulator that takes from the store's shared budget, and counts its list requests by path. */
function countingClient(store: PayhooksDatabase): { api: ApiClient; lists: Map<string, number> } {
  const lists = new Map<string, number>();
  const api = createClient({
    apiKey: 'sk_test_backfill',
    environment: simulator.url,
    rateLimit: createPostgresRateLimiter(store),
    fetch: (input, init) => {
      const url = new URL(input instanceof Request ? input.url : String(input));
      lists.set(url.pathname, (lists.get(url.pathname) ?? 0) + 1);
      return globalThis.fetch(input, init);
    },
  });
  return { api, lists };
}

type Row = Record<string, unknown>;

// One store per backend for the file, emptied after each test (emptyStore), and a mirror schema of its own per test:
// opening and migrating a store per test cost more than the short tests.
const stores = new Map<string, PayhooksDatabase>();
let mirrors = 0;
afterAll(async () => {
  for (const store of stores.values()) await dispose(store);
  stores.clear();
});

/** An empty store and a fresh mirror schema, emptied and dropped afterwards. */
async function withStore(
  backend: (typeof backends)[number],
  work: (ctx: {
    store: PayhooksDatabase;
    mirrorSchema: string;
    api: ApiClient;
    lists: Map<string, number>;
    backfill: (options?: Partial<BackfillOptions>) => ReturnType<typeof runBackfill>;
    query: (text: ReturnType<typeof sql>) => Promise<Row[]>;
  }) => Promise<void>,
): Promise<void> {
  const store = stores.get(backend.name) ?? (await backend.open());
  stores.set(backend.name, store);
  const mirrorSchema = `${store.schema}_mirror${++mirrors}`;
  const { api, lists } = countingClient(store);
  try {
    await work({
      store,
      mirrorSchema,
      api,
      lists,
      backfill: (options) => runBackfill({ store, api, mirrorSchema, ...options }),
      query: async (text) => (await text.execute(store.db.withoutPlugins())).rows as Row[],
    });
  } finally {
    // On PGlite too: the in-memory database outlives the test.
    await sql.raw(`drop schema if exists "${mirrorSchema}" cascade`).execute(store.db);
    await emptyStore(store);
  }
}

async function expectMirrorEqualsSimulator(store: PayhooksDatabase, mirrorSchema: string): Promise<void> {
  const expected = expectedMirror(simulator.records());
  const actual = await actualMirror(store, mirrorSchema);
  expect(actual.customers).toHaveLength(COUNT);
  expect(actual.invoices).toHaveLength(COUNT);
  expect(actual.customers).toEqual(expected.customers);
  expect(actual.invoices).toEqual(expected.invoices);
  // 1 + 2 + 3 items in turn, 1,999 in all.
  const items = actual.invoices.reduce((sum, invoice) => sum + invoice.items.length, 0);
  expect(items).toBe(expected.invoices.reduce((sum, invoice) => sum + invoice.items.length, 0));
}

describe('parseSince and parseResources', () => {
  it('reads a date as midnight UTC and a time with its zone; one --since spelled two ways shares a cursor', () => {
    expect(parseSince('2025-01-31').toISOString()).toBe('2025-01-31T00:00:00.000Z');
    expect(parseSince('2025-01-31T12:00:00+01:00').toISOString()).toBe('2025-01-31T11:00:00.000Z');
    expect(parseSince('2025-01-31T12:00Z').toISOString()).toBe('2025-01-31T12:00:00.000Z');
    expect(sinceKey(parseSince('2025-01-31'))).toBe(sinceKey(parseSince('2025-01-31T00:00:00Z')));
    expect(sinceKey(undefined)).toBe('');
  });

  it('refuses what is not a real date, and a time without a zone, saying what it takes', () => {
    expect(() => parseSince('2025-02-30')).toThrow(/"2025-02-30" is not a real date or time/);
    expect(() => parseSince('yesterday')).toThrow(/--since takes a date such as 2025-01-31/);
    expect(() => parseSince('2025-01-31T12:00:00')).toThrow(/has no zone \(add Z or an offset\)/);
    expect(() => parseSince('2025-1-3')).toThrow(PayhooksError);
  });

  it('takes customers and invoices in the order given, and refuses anything else listing the valid ones', () => {
    expect(parseResources('invoices, customers,invoices')).toEqual(['invoices', 'customers']);
    expect(() => parseResources('customers,payments')).toThrow(
      /--resource "payments" cannot be backfilled: the valid ones are customers, invoices \(the only resources the service's API lists/,
    );
    expect(() => parseResources(' , ')).toThrow(/--resource names no resource: the valid ones are customers, invoices/);
  });
});

describe.each(backends.filter((b) => b.available))('runBackfill ($name)', (backend) => {
  it('fills the mirror with 1,000 customers and 1,000 invoices in 20 list requests, equal to the simulator', {
    timeout: 60_000,
  }, async () => {
    await withStore(backend, async ({ store, mirrorSchema, lists, backfill, query }) => {
      const pages: BackfillProgress[] = [];
      const started = performance.now();
      const report = await backfill({ onProgress: (event) => pages.push(event) });
      const ms = Math.round(performance.now() - started);
      console.info(`[backfill ${backend.name}] 2,000 records in ${ms} ms`);

      expect(report.stopped).toBe(false);
      expect(report.resources).toEqual([
        expect.objectContaining({ resource: 'customers', start: 'fresh', read: COUNT, written: COUNT, requests: 10, finished: true }),
        expect.objectContaining({ resource: 'invoices', start: 'fresh', read: COUNT, written: COUNT, requests: 10, finished: true }),
      ]);
      expect(lists).toEqual(
        new Map([
          ['/v1/customers', 10],
          ['/v1/invoices', 10],
        ]),
      );
      expect(pages.filter((e) => e.kind === 'page').map((e) => e.kind === 'page' && e.position)).toEqual([
        ...[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((page) => page * 100),
        ...[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((page) => page * 100),
      ]);
      await expectMirrorEqualsSimulator(store, mirrorSchema);
      const rows = await query(
        sql`select source, last_event_id, count(*)::int as n from ${sql.id(mirrorSchema, 'customers')} group by 1, 2`,
      );
      expect(rows).toEqual([{ source: 'api', last_event_id: null, n: COUNT }]);
      expect(
        await query(sql`select resource, since_key, next_skip, written, finished_at is not null as finished
        from ${sql.id(mirrorSchema, 'backfill_cursors')} order by resource`),
      ).toEqual([
        { resource: 'customers', since_key: '', next_skip: COUNT, written: COUNT, finished: true },
        { resource: 'invoices', since_key: '', next_skip: COUNT, written: COUNT, finished: true },
      ]);

      // A finished pass: the next run is a new pass from the start, and rewrites the same rows.
      lists.clear();
      const again = await backfill({ resources: ['invoices'] });
      expect(again.resources).toEqual([expect.objectContaining({ resource: 'invoices', start: 'new-pass', from: 0, written: COUNT })]);
      expect(lists).toEqual(new Map([['/v1/invoices', 10]]));
      await expectMirrorEqualsSimulator(store, mirrorSchema);
    });
  });

  it('stopped by its signal after 3 pages, resumes at record 300 and finishes without re-reading them', {
    timeout: 60_000,
  }, async () => {
    await withStore(backend, async ({ store, mirrorSchema, lists, backfill, query }) => {
      const controller = new AbortController();
      const first = await backfill({
        signal: controller.signal,
        onProgress: (event) => {
          if (event.kind === 'page' && event.position === 300) controller.abort();
        },
      });
      expect(first.stopped).toBe(true);
      expect(first.resources).toEqual([expect.objectContaining({ resource: 'customers', position: 300, finished: false, requests: 3 })]);
      const cursor = sql`select next_skip, written, finished_at from ${sql.id(mirrorSchema, 'backfill_cursors')} where resource = 'customers'`;
      expect(await query(cursor)).toEqual([{ next_skip: 300, written: 300, finished_at: null }]);
      expect(await query(sql`select count(*)::int as n from ${sql.id(mirrorSchema, 'customers')}`)).toEqual([{ n: 300 }]);

      lists.clear();
      const starts: BackfillProgress[] = [];
      const second = await backfill({ onProgress: (event) => event.kind === 'start' && starts.push(event) });
      expect(starts).toEqual([
        expect.objectContaining({ resource: 'customers', start: 'resumed', from: 300, writtenBefore: 300 }),
        expect.objectContaining({ resource: 'invoices', start: 'fresh', from: 0 }),
      ]);
      expect(second.resources[0]).toMatchObject({ read: 700, written: 700, writtenInPass: COUNT, requests: 7, finished: true });
      expect(lists).toEqual(
        new Map([
          ['/v1/customers', 7],
          ['/v1/invoices', 10],
        ]),
      );
      await expectMirrorEqualsSimulator(store, mirrorSchema);
    });
  });

  it('with since, reads every page but writes only the records changed since then, under a cursor of its own', {
    timeout: 60_000,
  }, async () => {
    await withStore(backend, async ({ mirrorSchema, backfill, query }) => {
      const records = simulator.records();
      const changed = records.customers.map((c) => Date.parse(c.updatedAt)).sort((a, b) => a - b);
      const since = new Date(changed[Math.floor(COUNT / 2)]!);
      const customersSince = changed.filter((t) => t >= since.getTime()).length;
      // An invoice paid after `since` has changed since, although it was created before.
      const invoicesSince = records.invoices.filter(
        (i) => Math.max(Date.parse(i.createdAt), i.paidAt ? Date.parse(i.paidAt) : 0) >= since.getTime(),
      ).length;
      expect(customersSince).toBeLessThan(COUNT);

      const report = await backfill({ since });
      expect(report.resources).toEqual([
        expect.objectContaining({ resource: 'customers', read: COUNT, written: customersSince, olderThanSince: COUNT - customersSince }),
        expect.objectContaining({ resource: 'invoices', read: COUNT, written: invoicesSince, olderThanSince: COUNT - invoicesSince }),
      ]);
      const ids = await query(sql`select id from ${sql.id(mirrorSchema, 'customers')}`);
      expect(ids.length).toBe(customersSince);

      // Without --since: its own cursor, fresh, and everything written.
      const all = await backfill();
      expect(all.resources.map((r) => [r.start, r.written])).toEqual([
        ['fresh', COUNT],
        ['fresh', COUNT],
      ]);
      expect(await query(sql`select resource, since_key from ${sql.id(mirrorSchema, 'backfill_cursors')} order by 1, 2`)).toEqual([
        { resource: 'customers', since_key: '' },
        { resource: 'customers', since_key: since.toISOString() },
        { resource: 'invoices', since_key: '' },
        { resource: 'invoices', since_key: since.toISOString() },
      ]);
    });
  });

  it('keeps a row whose stored state is newer than the read, as the mirror sink does', { timeout: 60_000 }, async () => {
    await withStore(backend, async ({ store, mirrorSchema, backfill, query }) => {
      const [customer] = simulator.records().customers;
      await backfill({ resources: ['customers'] }); // creates the schema and the row
      const newer = { ...customerFromEvent({ ...customer!, name: 'From a later event' }, STATE_RANK.changed, false) };
      newer.stateAt = new Date(Date.now() + 3_600_000);
      expect(
        await writeMirrorState(store.db.withoutPlugins(), mirrorSchema, 'default', newer, {
          eventId: 'evt_later',
          eventType: 'CUSTOMER_UPDATED',
        }),
      ).toBe(true);
      const report = await backfill({ resources: ['customers'] });
      expect(report.resources[0]).toMatchObject({ start: 'new-pass', written: COUNT - 1, keptNewer: 1 });
      expect(await query(sql`select name, last_event_id from ${sql.id(mirrorSchema, 'customers')} where id = ${customer!.id}`)).toEqual([
        { name: 'From a later event', last_event_id: 'evt_later' },
      ]);
    });
  });

  it('stops with a clear error when another run moves its cursor, and the page it read is not written', { timeout: 60_000 }, async () => {
    await withStore(backend, async ({ store, mirrorSchema, query }) => {
      const cursors = sql.id(mirrorSchema, 'backfill_cursors');
      let requests = 0;
      // As a second run would: it moves the cursor while this one waits for its second page.
      const api = createClient({
        apiKey: 'sk_test_backfill',
        environment: simulator.url,
        rateLimit: false,
        fetch: async (input, init) => {
          if (++requests === 2)
            await sql`update ${cursors} set next_skip = 500 where resource = 'customers'`.execute(store.db.withoutPlugins());
          return globalThis.fetch(input, init);
        },
      });
      const run = runBackfill({ store, api, mirrorSchema, resources: ['customers'] });
      await expect(run).rejects.toThrow(BackfillConflictError);
      await expect(run).rejects.toThrow(/Another backfill of customers moved the cursor while this one ran/);
      expect(await query(sql`select count(*)::int as n from ${sql.id(mirrorSchema, 'customers')}`)).toEqual([{ n: 100 }]);
      expect(await query(sql`select next_skip from ${cursors}`)).toEqual([{ next_skip: 500 }]);
    });
  });
});
