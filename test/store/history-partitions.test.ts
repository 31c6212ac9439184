import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import {
  dropHistoryPartitions,
  ensureHistoryPartitions,
  HISTORY_TABLES,
  listHistoryPartitions,
} from '../../src/store/history-partitions.js';
import { getEvent, storeEvent } from '../../src/store/inbox.js';
import { migrate, readMigrations } from '../../src/store/migrate.js';
import { setState } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const DAY_MS = 86_400_000;

/** Every partition of `table` in the store's schema, by name. */
async function partitionsOf(store: PayhooksDatabase, table: string): Promise<string[]> {
  const { rows } = await sql<{ name: string }>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
      join pg_namespace n on n.oid = p.relnamespace where n.nspname = ${store.schema} and p.relname = ${table} order by 1`.execute(
    store.db,
  );
  return rows.map((row) => row.name);
}

/**
 * What a partition holds of its parent, in the catalog: each column (type, NOT NULL, default, compression, storage), its
 * checks (inherited, so that a migration dropping the parent's drops them too), its indexes (with the table's own name taken out of theirs, and the parent index each is attached to) and its
 * triggers.
 */
async function partitionShape(store: PayhooksDatabase, name: string) {
  const table = `"${store.schema}"."${name}"`;
  const columns = await sql<Record<string, unknown>>`
    select a.attname, format_type(a.atttypid, a.atttypmod) as type, a.attnotnull, pg_get_expr(d.adbin, d.adrelid) as default_value,
           a.attcompression, a.attstorage
      from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum
     where a.attrelid = ${table}::regclass and a.attnum > 0 and not a.attisdropped order by a.attname`.execute(store.db);
  const checks = await sql<Record<string, unknown>>`
    select conname, pg_get_constraintdef(oid) as definition, conislocal, coninhcount from pg_constraint
     where conrelid = ${table}::regclass and contype = 'c' order by conname`.execute(store.db);
  const indexes = await sql<Record<string, unknown>>`
    select replace(pg_get_indexdef(i.indexrelid), ${name}, 'T') as definition, h.inhparent::regclass::text as parent, x.indisvalid
      from pg_index i join pg_index x on x.indexrelid = i.indexrelid left join pg_inherits h on h.inhrelid = i.indexrelid
     where i.indrelid = ${table}::regclass order by 1`.execute(store.db);
  // A foreign key's triggers (migrations/018: the history refers to the accounts) are named by their own oid: the name
  // without it is compared.
  const triggers = await sql<Record<string, unknown>>`
    select regexp_replace(tgname, '^(RI_ConstraintTrigger_[a-z]_)[0-9]+$', '\\1') as tgname, tgtype, tgfoid::regproc::text as function from pg_trigger where tgrelid = ${table}::regclass order by 1`.execute(
    store.db,
  );
  return { columns: columns.rows, checks: checks.rows, indexes: indexes.rows, triggers: triggers.rows };
}

describe.each(backends)('history partitions on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)('makes the partitions ahead once, aligned to the span, with a twin in each history table', async () => {
    store = await backend.open();
    const now = new Date('2026-11-25T13:45:00Z');
    const made = await ensureHistoryPartitions(store, { span: 'day', ahead: 2, now });
    expect(made.map((p) => [p.name, p.from?.toISOString(), p.to.toISOString()])).toEqual([
      ['inbox_events_p20261125t000000', '2026-11-25T00:00:00.000Z', '2026-11-26T00:00:00.000Z'],
      ['inbox_events_p20261126t000000', '2026-11-26T00:00:00.000Z', '2026-11-27T00:00:00.000Z'],
      ['inbox_events_p20261127t000000', '2026-11-27T00:00:00.000Z', '2026-11-28T00:00:00.000Z'],
    ]);
    // Again, and twice at once: nothing more (the advisory lock lets one make them, the other finds them made).
    const [a, b] = await Promise.all([
      ensureHistoryPartitions(store, { span: 'day', ahead: 2, now }),
      ensureHistoryPartitions(store, { span: 'day', ahead: 2, now }),
    ]);
    expect([...a, ...b]).toEqual([]);
    for (const table of HISTORY_TABLES)
      expect(await partitionsOf(store, table)).toEqual(made.map((p) => p.name.replace('inbox_events', table)));
    // A week from Monday, after the days above; and back in time to an instant asked for.
    const weeks = await ensureHistoryPartitions(store, { span: 'week', ahead: 1, now: new Date('2026-12-02T00:00:00Z') });
    expect(weeks.map((p) => [p.from?.toISOString(), p.to.toISOString()])).toEqual([
      ['2026-11-28T00:00:00.000Z', '2026-11-30T00:00:00.000Z'],
      ['2026-11-30T00:00:00.000Z', '2026-12-07T00:00:00.000Z'],
      ['2026-12-07T00:00:00.000Z', '2026-12-14T00:00:00.000Z'],
    ]);
    const back = await ensureHistoryPartitions(store, { span: 'day', now, from: new Date('2026-11-23T05:00:00Z') });
    expect(back.map((p) => p.from?.toISOString())).toEqual(['2026-11-23T00:00:00.000Z', '2026-11-24T00:00:00.000Z']);
    const all = await listHistoryPartitions(store);
    for (let i = 1; i < all.length; i++) expect(all[i]!.from).toEqual(all[i - 1]!.to);
  });

  it.skipIf(!backend.available)(
    'a partition made ahead (a table attached) has what `partition of` gives: columns, defaults, checks, indexes, triggers',
    async () => {
      store = await backend.open();
      const s = store;
      const [made] = await ensureHistoryPartitions(s, { span: 'day', ahead: 0, now: new Date('2026-11-25T13:45:00Z') });
      expect(made?.name).toBe('inbox_events_p20261125t000000');
      for (const table of HISTORY_TABLES) {
        const reference = `${table}_reference`;
        await sql`create table ${sql.id(s.schema, reference)} partition of ${sql.id(s.schema, table)}
                    for values from ('2030-01-01T00:00:00Z') to ('2030-01-02T00:00:00Z')`.execute(s.db);
        const attached = await partitionShape(s, made!.name.replace('inbox_events', table));
        expect(attached.columns.length).toBeGreaterThan(4);
        expect(attached.indexes.length).toBeGreaterThan(0);
        expect(attached).toEqual(await partitionShape(s, reference));
      }
    },
  );

  it.skipIf(!backend.available)(
    'a receiver meeting a receipt time no partition covers makes the partition and stores the delivery',
    async () => {
      // Migrated and never opened by createPayhooks: no partition at all, as after days with no payhooks process.
      store = await backend.open();
      expect(await listHistoryPartitions(store)).toEqual([]);
      const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_lone' });
      const outcome = await storeEvent(store, {
        eventId: 'evt_lone',
        eventType: event.eventType,
        resourceKey: null,
        rawBody: JSON.stringify(event),
        headers: {},
      });
      expect(outcome.inserted).toBe(true);
      expect((await getEvent(store, 'evt_lone'))?.status).toBe('pending');
      const partitions = await listHistoryPartitions(store);
      expect(partitions.length).toBeGreaterThanOrEqual(2);
      expect(partitions[0]!.from!.getTime()).toBeLessThanOrEqual(Date.now());
      expect(partitions.at(-1)!.to.getTime()).toBeGreaterThan(Date.now() + DAY_MS);
    },
  );

  it.skipIf(!backend.available)(
    'the worker keeps retention: finished events go with their partition, a partition holding a dead event stays, and redeliveries stay duplicates',
    { timeout: 60_000 },
    async () => {
      store = await backend.open();
      const s = store;
      const secret = 'whsec_partitions';
      // Partitions of a second, history kept three seconds: what a day and 30 days are in production, sped up.
      hooks = createPayhooks({
        database: s,
        secret,
        logger: pino({ level: 'silent' }),
        worker: { pollIntervalMs: 50, maxAttempts: 1 },
        history: { partition: '1s', retention: { history: '3s' } },
      });
      const runs: string[] = [];
      hooks.on('INVOICE_PAID', async (event) => {
        runs.push(event.eventId);
        if (event.eventId === 'evt_dead') throw new Error('always fails');
      });
      await hooks.start();
      const scheme = createDefaultScheme({ secrets: secret });
      const deliver = (eventId: string) => {
        const rawBody = Buffer.from(JSON.stringify(exampleEvent('INVOICE_PAID', { eventId })));
        return hooks!.receive({ method: 'POST', headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) }, rawBody });
      };
      expect((await deliver('evt_dead')).status).toBe(200);
      await waitFor(async () => (await getEvent(s, 'evt_dead'))?.status === 'dead', 'evt_dead dead');
      // A second later, in a partition of its own: a finished event.
      await new Promise((resolve) => setTimeout(resolve, 1100));
      expect((await deliver('evt_done')).status).toBe(200);
      await waitFor(async () => (await getEvent(s, 'evt_done'))?.status === 'done', 'evt_done done');
      await waitFor(async () => (await getEvent(s, 'evt_done')) === undefined, 'evt_done dropped with its partition', 15_000);
      // The dead event's partition is past retention too, and kept for it.
      expect((await getEvent(s, 'evt_dead'))?.status).toBe('dead');
      const again = await deliver('evt_done');
      expect(JSON.parse(again.body)).toEqual({ received: true, duplicate: true });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(runs).toEqual(['evt_dead', 'evt_done']);
    },
  );

  it.skipIf(!backend.available)(
    'bodies are compressed with lz4 where the server has it: in partitions made before 016 and after, and in one retention rebuilt',
    async () => {
      store = await backend.open({ migrated: false });
      const s = store;
      const expected = backend.name === 'postgres' ? 'lz4' : 'pglz'; // PGlite is built without lz4
      // pg_attribute's attcompression: 'l' for lz4, '' for the server's default (pglz).
      const setting = expected === 'lz4' ? 'l' : '';
      // Past the row size at which PostgreSQL compresses (about 2 KB), as a delivery's body is.
      const storeLarge = async (eventId: string, schemaBefore018 = false) => {
        const event = { ...exampleEvent('INVOICE_PAID', { eventId }), note: 'paid in full '.repeat(250) };
        if (!schemaBefore018) {
          await storeEvent(s, { eventId, eventType: event.eventType, resourceKey: null, rawBody: JSON.stringify(event), headers: {} });
          return;
        }
        // Today's store writes the account, which the schema of before 018 does not have: the rows the store wrote then.
        await ensureHistoryPartitions(s);
        await sql`insert into ${sql.id(s.schema, 'event_ledger')} (event_id, body_sha256) values (${eventId}, '\\x00'::bytea)`.execute(
          s.db,
        );
        await sql`insert into ${sql.id(s.schema, 'inbox_events')} (event_id, event_type, raw_body, received_at)
                  select event_id, ${event.eventType}, ${JSON.stringify(event)}, first_received_at
                    from ${sql.id(s.schema, 'event_ledger')} where event_id = ${eventId}`.execute(s.db);
      };
      const compressionOf = async (eventId: string) =>
        (
          await sql<{ method: string | null }>`select pg_column_compression(raw_body) as method
            from ${sql.id(s.schema, 'inbox_events')} where event_id = ${eventId}`.execute(s.db)
        ).rows[0]?.method;
      const partitionSettings = async () =>
        (
          await sql<{ setting: string }>`select a.attcompression as setting from pg_inherits i
            join pg_attribute a on a.attrelid = i.inhrelid and a.attname = 'raw_body'
           where i.inhparent = ${`"${s.schema}".inbox_events`}::regclass`.execute(s.db)
        ).rows.map((row) => row.setting);

      await migrate(
        s,
        readMigrations().filter((file) => file.name < '016'),
      );
      await storeLarge('before_016', true);
      await setState(s, 'before_016', 'dead', { received_at: sql`now() - interval '40 days'` });
      await storeLarge('old_done', true);
      await setState(s, 'old_done', 'done', { received_at: sql`now() - interval '40 days'` });
      expect(await compressionOf('before_016')).toBe('pglz');
      const made = (await partitionSettings()).length;
      expect(made).toBeGreaterThanOrEqual(2);

      await migrate(s);
      expect(await partitionSettings()).toEqual(Array(made).fill(setting));
      await storeLarge('after_016');
      expect(await compressionOf('after_016')).toBe(expected);
      // A partition made after the migration takes the partitioned table's setting.
      await ensureHistoryPartitions(s, { span: 'day', ahead: 1, now: new Date(Date.now() + 10 * DAY_MS) });
      expect((await partitionSettings()).length).toBeGreaterThan(made);
      expect(new Set(await partitionSettings())).toEqual(new Set([setting]));
      // Retention rebuilds the old partition with its dead event alone: the new table keeps the setting too.
      const report = await dropHistoryPartitions(s, { before: new Date(Date.now() - 30 * DAY_MS) });
      expect(report.kept.map((p) => p.compacted)).toEqual([1]);
      expect(new Set(await partitionSettings())).toEqual(new Set([setting]));
      // What was stored before stays readable as it was written.
      expect((await getEvent(s, 'before_016'))?.status).toBe('dead');
      expect(await compressionOf('before_016')).toBe('pglz');
      expect(JSON.parse((await getEvent(s, 'after_016'))!.rawBody).eventId).toBe('after_016');
    },
  );
});

// PGlite is one connection: a second statement waits its turn there, so only the real server can hold a lock meanwhile.
const postgres = backends[0]!;

/** Stores `eventId` as finished, received `days` ago: in a partition that a drop before yesterday takes. */
async function storeDoneDaysAgo(store: PayhooksDatabase, eventId: string, days: number): Promise<void> {
  const event = exampleEvent('INVOICE_PAID', { eventId });
  await storeEvent(store, { eventId, eventType: event.eventType, resourceKey: null, rawBody: JSON.stringify(event), headers: {} });
  await setState(store, eventId, 'done', { received_at: sql`now() - make_interval(days => ${days})` });
}
describe.skipIf(!postgres.available)('history partitions beside a long statement on postgres', () => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it('a drop that cannot have its locks in time leaves the partition for the next run and goes on', async () => {
    store = await postgres.open();
    const s = store;
    await storeDoneDaysAgo(s, 'evt_busy', 3);
    // A long report reading the history holds a lock a drop must wait for.
    const report = await s.db.connection().execute(async (reader) => {
      await sql`begin`.execute(reader);
      await sql`select count(*) from ${sql.id(s.schema, 'inbox_events')}`.execute(reader);
      const made = await dropHistoryPartitions(s, { before: new Date(Date.now() - DAY_MS), lockTimeoutMs: 200 });
      await sql`rollback`.execute(reader);
      return made;
    });
    expect(report.dropped).toEqual([]);
    expect(report.busy.length).toBeGreaterThan(0);
    expect((await getEvent(s, 'evt_busy'))?.status).toBe('done');
    // Once the reader is gone, the next run drops it.
    const next = await dropHistoryPartitions(s, { before: new Date(Date.now() - DAY_MS) });
    expect(next.busy).toEqual([]);
    expect(await getEvent(s, 'evt_busy')).toBeUndefined();
  });

  // What failed CI once: `payhooks replay` counted effect steps joined to their events (effect_steps named first)
  // while `payhooks prune` locked the history in its order; each held a table the other wanted, and the server's
  // deadlock check killed the replay's statement.
  it('a transaction holding one history table that then reads another is never the one to fail: the drop yields', async () => {
    store = await postgres.open();
    const s = store;
    await storeDoneDaysAgo(s, 'evt_yield', 3);
    const { rows } = await sql<{ ms: string }>`
      select extract(epoch from current_setting('deadlock_timeout')::interval) * 1000 as ms`.execute(s.db);
    const deadlockCheckMs = Number(rows[0]!.ms);
    const [readerOutcome, report] = await Promise.all([
      s.db.connection().execute(async (reader) => {
        await sql`begin`.execute(reader);
        await sql`select count(*) from ${sql.id(s.schema, 'effect_steps')}`.execute(reader);
        // Long enough for the drop to hold inbox_events and wait for effect_steps.
        await new Promise((resolve) => setTimeout(resolve, 100));
        const read = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(s.schema, 'inbox_events')}`
          .execute(reader)
          .then((result) => `read ${result.rows[0]!.n}`)
          .catch((err: Error) => err.message);
        // Held past the server's deadlock check, as a slow transaction would.
        await new Promise((resolve) => setTimeout(resolve, deadlockCheckMs + 500));
        await sql`commit`.execute(reader);
        return read;
      }),
      dropHistoryPartitions(s, { before: new Date(Date.now() - DAY_MS), lockTimeoutMs: 10_000 }),
    ]);
    expect(readerOutcome).toBe('read 1');
    expect(report.busy).toEqual([]);
    expect(report.dropped.map((p) => p.events)).toContain(1);
    expect(await getEvent(s, 'evt_yield')).toBeUndefined();
  });

  /** Locks a session waits for on the store's tables (0 once nothing waits). */
  async function waitingLocks(s: PayhooksDatabase): Promise<number> {
    const { rows } = await sql<{ n: number }>`
      select count(*)::int as n from pg_locks l join pg_class c on c.oid = l.relation join pg_namespace n on n.oid = c.relnamespace
       where not l.granted and n.nspname = ${s.schema}`.execute(s.db);
    return rows[0]!.n;
  }

  // What the worker's outcome statement does in one statement, spread over two so that the order is certain: it holds
  // handler_runs (its marks) and then writes inbox_events (the finished events). `create table … partition of` took
  // inbox_events in access exclusive mode and then waited for handler_runs: a deadlock, 40 to 129 a minute with 2-second
  // partitions. Attaching holds the parents in a mode that row writes do not conflict with.
  it('making partitions beside a transaction that wrote handler_runs and then writes inbox_events: neither waits, nothing fails', async () => {
    store = await postgres.open();
    const s = store;
    await ensureHistoryPartitions(s);
    const later = new Date(Date.now() + 10 * DAY_MS);
    const outcome = await s.db.connection().execute(async (writer) => {
      await sql`begin`.execute(writer);
      await sql`insert into ${sql.id(s.schema, 'handler_runs')} (event_id, account, handler, received_at) values ('evt_order', 'default', 'h', now())`.execute(
        writer,
      );
      let settled = false;
      const making = ensureHistoryPartitions(s, { span: 'day', ahead: 3, now: later }).then(
        (made) => `made ${made.length}`,
        (err: Error & { code?: string }) => `${err.code}: ${err.message}`,
      );
      void making.then(() => (settled = true));
      // Until the partitions are made, or the creation waits for this transaction.
      await waitFor(async () => settled || (await waitingLocks(s)) > 0, 'the creation to finish or wait', 10_000);
      const wrote = await sql`insert into ${sql.id(s.schema, 'inbox_events')} (event_id, account, event_type, raw_body, received_at)
                                values ('evt_order', 'default', 'INVOICE_PAID', '{}', now())`
        .execute(writer)
        .then(
          () => 'wrote',
          (err: Error & { code?: string }) => `${err.code}: ${err.message}`,
        );
      await sql`${sql.raw(wrote === 'wrote' ? 'commit' : 'rollback')}`.execute(writer);
      return { wrote, made: await making };
    });
    expect(outcome).toEqual({ wrote: 'wrote', made: 'made 10' });
    expect((await getEvent(s, 'evt_order'))?.status).toBe('pending');
  });

  // A transaction that takes two history tables in a mode attaching conflicts with (an operator's ANALYZE of each, a
  // migration), in another order than the creation's: the creation steps back, as a drop does, and makes its
  // partitions once the other has committed.
  it('a transaction holding one history table that then wants another is never the one to fail: the creation yields', async () => {
    store = await postgres.open();
    const s = store;
    await ensureHistoryPartitions(s);
    const { rows } = await sql<{ ms: string }>`
      select extract(epoch from current_setting('deadlock_timeout')::interval) * 1000 as ms`.execute(s.db);
    const deadlockCheckMs = Number(rows[0]!.ms);
    const [analyzed, made] = await Promise.all([
      s.db.connection().execute(async (operator) => {
        await sql`begin`.execute(operator);
        await sql`analyze ${sql.id(s.schema, 'handler_runs')}`.execute(operator);
        // Until the creation holds inbox_events and waits for handler_runs.
        await waitFor(async () => (await waitingLocks(s)) > 0, 'the creation to wait for handler_runs', 10_000);
        const second = await sql`analyze ${sql.id(s.schema, 'inbox_events')}`.execute(operator).then(
          () => 'analyzed',
          (err: Error & { code?: string }) => `${err.code}: ${err.message}`,
        );
        // Held past the server's deadlock check, as a slow transaction would.
        await new Promise((resolve) => setTimeout(resolve, deadlockCheckMs + 500));
        await sql`${sql.raw(second === 'analyzed' ? 'commit' : 'rollback')}`.execute(operator);
        return second;
      }),
      ensureHistoryPartitions(s, { span: 'day', ahead: 3, now: new Date(Date.now() + 10 * DAY_MS), lockTimeoutMs: 20_000 }),
    ]);
    expect(analyzed).toBe('analyzed');
    expect(made.length).toBe(10);
  });

  it('a creation that cannot have its locks within its budget fails, naming why, and makes nothing', async () => {
    store = await postgres.open();
    const s = store;
    await ensureHistoryPartitions(s);
    const before = await listHistoryPartitions(s);
    const failure = await s.db.connection().execute(async (operator) => {
      await sql`begin`.execute(operator);
      await sql`analyze ${sql.id(s.schema, 'effect_steps')}`.execute(operator);
      const outcome = await ensureHistoryPartitions(s, { now: new Date(Date.now() + 10 * DAY_MS), lockTimeoutMs: 300 }).then(
        (made) => `made ${made.length}`,
        (err: Error) => err.message,
      );
      await sql`rollback`.execute(operator);
      return outcome;
    });
    expect(failure).toMatch(/^The history's partitions could not be made: its tables were held by another statement for 300 ms/);
    expect(await listHistoryPartitions(s)).toEqual(before);
  });
});
