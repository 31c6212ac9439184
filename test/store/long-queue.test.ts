import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { eventKey } from '../../src/store/accounts.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { vacuumQueue } from '../../src/store/maintenance.js';
import { extendLeases, recordOutcomes } from '../../src/store/outcomes.js';
import { putEvents } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

/** Queued events, all leased by one worker: the queue a worker drains a large backlog from. */
const QUEUED = 20_000;
/** One outcome batch, and one heartbeat's worth of leases: the sizes a draining worker sends. */
const BATCH = 500;

describe.each(backends)('a worker’s statements in a long queue ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  const ids = Array.from({ length: QUEUED }, (_, n) => `evt_probe_${String(n).padStart(5, '0')}`);

  beforeAll(async () => {
    if (!backend.available) return;
    store = await backend.open();
    for (let start = 0; start < QUEUED; start += 1000)
      await putEvents(
        store,
        ids.slice(start, start + 1000).map((eventId) => exampleEvent('CUSTOMER_UPDATED', { eventId })),
      );
    await sql`update ${sql.id(store.schema, 'inbox_queue')} set lease_owner = 'w', run_at = now() + interval '1 hour'`.execute(store.db);
  }, 120_000);
  afterAll(async () => {
    if (store) await dispose(store);
  });

  /**
   * Runs `work` in a transaction and says how many queue rows it read by scanning the table rather than by key: the
   * transaction's count of such reads, before and after (the count may still hold earlier transactions' reads of the
   * same connection, not yet sent to the statistics).
   */
  const rowsScanned = async (work: (db: PayhooksDatabase) => Promise<unknown>) => (await queueReads(work)).scanned;
  /** As rowsScanned, with the rows fetched through an index too (`fetched`: a walk of a whole index counts them all). */
  const queueReads = async (work: (db: PayhooksDatabase) => Promise<unknown>) =>
    store!.db.transaction().execute(async (trx) => {
      const read = async () => {
        const { rows } = await sql<{ read: string | number | null; fetched: string | number | null }>`
          select seq_tup_read as read, idx_tup_fetch as fetched from pg_stat_xact_user_tables
           where relid = ${`"${store!.schema}".inbox_queue`}::regclass`.execute(trx);
        return { scanned: Number(rows[0]?.read ?? 0), fetched: Number(rows[0]?.fetched ?? 0) };
      };
      const before = await read();
      await work({ ...store!, db: trx });
      const after = await read();
      return { scanned: after.scanned - before.scanned, fetched: after.fetched - before.fetched };
    });

  // Given the batch's ids outright, the planner weighed a probe per id against one pass over the queue and took the
  // pass: 10 to 15 ms per batch of 500 in a queue of 26,000 (EXPLAIN ANALYZE of a draining worker, issue 27).
  it.skipIf(!backend.available)('a batch of finished events leaves the queue by key, without reading the rest of it', async () => {
    const batch = ids.slice(0, BATCH);
    let held: boolean[] = [];
    const { scanned, fetched } = await queueReads(async (db) => {
      held = await recordOutcomes(
        db,
        'w',
        batch.map((eventId) => ({ kind: 'finished' as const, account: 'default', eventId, status: 'done' as const, lastError: null })),
      );
    });
    expect(held).toEqual(batch.map(() => true));
    expect(scanned).toBe(0);
    // Nor by walking an index: with no retries in the batch, the planner once walked the whole due index for them.
    expect(fetched).toBeGreaterThanOrEqual(BATCH);
    expect(fetched).toBeLessThan(3 * BATCH);
    const { rows } = await sql<{ n: string | number }>`select count(*) as n from ${sql.id(store!.schema, 'inbox_queue')}`.execute(
      store!.db,
    );
    expect(Number(rows[0]!.n)).toBe(QUEUED - BATCH);
  });

  it.skipIf(!backend.available)('a heartbeat finds its leases by key too', async () => {
    const batch = ids.slice(QUEUED - BATCH);
    let extended = new Map<string, string>();
    const scanned = await rowsScanned(async (db) => {
      extended = await extendLeases(
        db,
        'w',
        batch.map((eventId) => ({ account: 'default', eventId })),
        60_000,
      );
    });
    expect([...extended.keys()].sort()).toEqual(batch.map((eventId) => eventKey('default', eventId)));
    expect(scanned).toBe(0);
  });

  // Giving the empty end of the file back takes a lock that stops every claim and outcome, and the vacuum waits up to
  // 5 s for it; a queue that drained fills again. Autovacuum, which keeps the table's default, still gives it back.
  it.skipIf(!backend.available)('the worker’s vacuum frees the queue’s emptied pages for reuse without giving them back', async () => {
    const queue = sql.id(store!.schema, 'inbox_queue');
    const size = async () =>
      Number(
        (await sql<{ bytes: string | number }>`select pg_relation_size(${`"${store!.schema}".inbox_queue`}) as bytes`.execute(store!.db))
          .rows[0]!.bytes,
      );
    const { rows } = await sql<{ xid: string }>`with gone as (delete from ${queue} returning 1)
      select (pg_current_xact_id()::text::bigint % 4294967296)::text as xid from gone limit 1`.execute(store!.db);
    const emptied = await size();
    expect(emptied).toBeGreaterThan(1_000_000);
    if (store!.kind === 'postgres') {
      // A vacuum frees only rows no snapshot can still see: other test files run beside this one on the same server,
      // and one of their transactions begun before the delete would keep the rows (and the file would grow below).
      const deleted = rows[0]!.xid;
      const olderTransactions = async () =>
        (
          await sql<{ n: number }>`select count(*)::int as n from pg_stat_activity
            where datname = current_database() and pid <> pg_backend_pid() and backend_xmin is not null
              and backend_xmin::text::bigint <= ${deleted}::bigint`.execute(store!.db)
        ).rows[0]!.n;
      await waitFor(async () => (await olderTransactions()) === 0, 'transactions older than the delete to end', 30_000);
    }
    await vacuumQueue(store!);
    expect(await size()).toBe(emptied);
    // The pages are free again: a new batch fills them instead of growing the file.
    await putEvents(
      store!,
      Array.from({ length: 1000 }, (_, n) => exampleEvent('CUSTOMER_UPDATED', { eventId: `evt_refill_${n}` })),
    );
    expect(await size()).toBe(emptied);
  });
});
