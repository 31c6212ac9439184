import { mkdtempSync, writeFileSync, copyFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent, listEvents, storeEvent, storeEvents, type IncomingEvent } from '../../src/store/inbox.js';
import { pruneEvents, replayEvents, SENDER_RETRY_HORIZON_MS } from '../../src/store/maintenance.js';
import { dropHistoryPartitions } from '../../src/store/history-partitions.js';
import { markHandlerCompleted } from '../../src/store/outcomes.js';
import { MIGRATIONS_DIR, MigrationChecksumError, migrate, readMigrations } from '../../src/store/migrate.js';
import { setState } from '../helpers/inbox.js';
import { backends, dispose, emptyStore } from '../helpers/stores.js';

function incoming(eventId: string, overrides: Partial<IncomingEvent> = {}): IncomingEvent {
  const rawBody = JSON.stringify({ eventId, eventType: 'INVOICE_PAID', data: { invoiceId: 'inv_1' } });
  return {
    eventId,
    eventType: 'INVOICE_PAID',
    resourceKey: 'invoice:inv_1',
    rawBody,
    headers: { 'x-webhook-timestamp': '1700000000' },
    ...overrides,
  };
}

describe.each(backends)('store on $name', (backend) => {
  // The migrated store is opened once for the file and emptied after each test (emptyStore): opening and migrating
  // one per test cost more than the tests. The migration tests open unmigrated stores of their own.
  let shared: PayhooksDatabase | undefined;
  let store: PayhooksDatabase | undefined;
  const openShared = async () => (shared ??= await backend.open());
  afterEach(async () => {
    if (store === shared && store) await emptyStore(store);
    else if (store) await dispose(store);
    store = undefined;
  });
  afterAll(async () => {
    if (shared) await dispose(shared);
    shared = undefined;
  });

  describe.skipIf(!backend.available)('inbox', () => {
    it('stores a new event once, then counts repeats without changing anything else', async () => {
      store = await openShared();
      const first = await storeEvent(store, incoming('evt_1'));
      expect(first).toEqual({ inserted: true, deliveries: 1 });
      const before = await getEvent(store, 'evt_1');

      const repeat = await storeEvent(store, incoming('evt_1', { rawBody: '{"changed":true}', eventType: 'OTHER' }));
      expect(repeat).toEqual({ inserted: false, deliveries: 2 });
      const after = await getEvent(store, 'evt_1');
      expect(after).toEqual({ ...before, deliveries: 2 });
    });

    it('keeps the exact body text and the headers; payload is not written at receipt (raw_body is the record)', async () => {
      store = await openShared();
      const rawBody = '{ "eventId":"evt_ws",  "eventType":"X", "data":{"b":1,"a":2} }';
      await storeEvent(store, incoming('evt_ws', { rawBody, eventType: 'X', resourceKey: null }));
      const row = await store.db.selectFrom('inbox_events').selectAll().where('event_id', '=', 'evt_ws').executeTakeFirstOrThrow();
      expect(row.raw_body).toBe(rawBody);
      expect(row.payload).toBeNull();
      expect(row.headers).toEqual({ 'x-webhook-timestamp': '1700000000' });
      expect(row.status).toBe('pending');
      expect(row.attempts).toBe(0);
      expect(row.resource_key).toBeNull();
    });

    it('keeps each body of a batch byte for byte, whatever its characters (the batch sends them as one run of bytes)', async () => {
      store = await openShared();
      // Multi-byte characters before a body shift every later one's start in bytes, not in characters; quotes,
      // backslashes and braces are what an array literal would have to escape; one id comes twice, its second body unstored.
      const texts = ['{"s":"é"}', '{"s":"日本語 \\" \\\\ {a,b}"}', '{"s":"🙂🙂"}', '{}', '{"s":"\\u00e9 plain"}'];
      const events = texts.map((rawBody, i) => incoming(`evt_bytes_${i}`, { rawBody, resourceKey: null }));
      const outcomes = await storeEvents(store, [...events, { ...events[1]!, rawBody: 'a repeat is not stored' }]);
      expect(outcomes.map((outcome) => outcome.inserted)).toEqual([true, true, true, true, true, false]);
      const rows = await store.db.selectFrom('inbox_events').select(['event_id', 'raw_body']).orderBy('event_id').execute();
      expect(rows).toEqual(texts.map((rawBody, i) => ({ event_id: `evt_bytes_${i}`, raw_body: rawBody })));
      // The ledger hashes each body's own bytes, cut from the same run.
      const { rows: hashes } = await sql<{ matches: boolean }>`
        select l.body_sha256 = sha256(convert_to(e.raw_body, 'UTF8')) as matches
          from ${sql.id(store.schema, 'event_ledger')} l join ${sql.id(store.schema, 'inbox_events')} e using (event_id)`.execute(store.db);
      expect(hashes).toEqual(texts.map(() => ({ matches: true })));
    });

    it('keeps a body with a \\u0000 escape as raw text, which jsonb could not hold', async () => {
      store = await openShared();
      const rawBody = '{"eventId":"evt_nul","eventType":"X","data":{"s":"a\\u0000b"}}';
      await storeEvent(store, incoming('evt_nul', { rawBody }));
      const row = await store.db.selectFrom('inbox_events').select(['raw_body', 'payload']).executeTakeFirstOrThrow();
      expect(row.raw_body).toBe(rawBody);
      expect(row.payload).toBeNull();
    });

    it('lists by status and type, newest first', async () => {
      store = await openShared();
      await storeEvent(store, incoming('a', { eventType: 'INVOICE_PAID' }));
      await storeEvent(store, incoming('b', { eventType: 'CUSTOMER_CREATED' }));
      await storeEvent(store, incoming('c', { eventType: 'INVOICE_PAID' }));
      await store.db.updateTable('inbox_events').set({ status: 'dead' }).where('event_id', '=', 'c').execute();
      expect((await listEvents(store)).map((e) => e.eventId)).toEqual(['c', 'b', 'a']);
      expect((await listEvents(store, { eventType: 'INVOICE_PAID' })).map((e) => e.eventId)).toEqual(['c', 'a']);
      expect((await listEvents(store, { status: 'dead' })).map((e) => e.eventId)).toEqual(['c']);
      expect(await getEvent(store, 'missing')).toBeUndefined();
    });

    it('counts concurrent deliveries of the same events exactly', async () => {
      store = await openShared();
      const s = store;
      const ids = Array.from({ length: 200 }, (_, i) => `evt_${i % 20}`);
      const outcomes = await Promise.all(ids.map((id) => storeEvent(s, incoming(id))));
      expect(outcomes.filter((o) => o.inserted)).toHaveLength(20);
      const rows = await s.db.selectFrom('inbox_event_states').select(['event_id', 'deliveries']).execute();
      expect(rows).toHaveLength(20);
      expect(rows.every((r) => r.deliveries === 10)).toBe(true);
    });
  });

  describe.skipIf(!backend.available)('maintenance', () => {
    it('prune drops the partitions of finished events older than the age, keeps the unfinished, dead and invalid ones of a partition, and takes an age inside the retry horizon', async () => {
      store = await openShared();
      const states = ['pending', 'processing', 'done', 'dead', 'ignored', 'invalid'] as const;
      const put = async (id: string, status: (typeof states)[number], days: number) => {
        await storeEvent(store!, incoming(id));
        await setState(store!, id, status, { received_at: sql`now() - make_interval(days => ${days})` });
      };
      // Finished events alone in the partitions of 40 and 10 days ago; every state together in that of 20 days ago.
      for (const status of ['done', 'ignored'] as const) for (const days of [40, 10]) await put(`${status}_${days}`, status, days);
      for (const status of states) await put(`${status}_20`, status, 20);
      const preview = await dropHistoryPartitions(store, { before: new Date(Date.now() - SENDER_RETRY_HORIZON_MS), dryRun: true });
      // processing is pending in the history with a lease in the queue: two pending, both queued.
      expect(preview.kept.map((p) => [p.unresolved, p.compacted])).toEqual([[{ pending: 2, dead: 1, invalid: 1, queued: 2 }, 2]]);
      expect(await pruneEvents(store, SENDER_RETRY_HORIZON_MS)).toBe(6);
      expect((await listEvents(store)).map((e) => e.eventId).sort()).toEqual(
        ['pending_20', 'processing_20', 'dead_20', 'invalid_20'].sort(),
      );
      // The partition of 20 days ago stays for them, rebuilt without its finished events; a second prune drops nothing.
      expect(await pruneEvents(store, SENDER_RETRY_HORIZON_MS)).toBe(0);
      expect((await getEvent(store, 'processing_20'))?.status).toBe('processing');
      // Deduplication outlives the dropped history.
      expect(await storeEvent(store, incoming('done_40'))).toMatchObject({ inserted: false });
      expect(await storeEvent(store, incoming('done_20'))).toMatchObject({ inserted: false });
    });

    it('replay re-queues by id or state, keeps completion marks except for done events, and leaves processing ones alone', async () => {
      store = await openShared();
      for (const [id, status] of [
        ['d1', 'dead'],
        ['d2', 'dead'],
        ['ok', 'done'],
        ['busy', 'processing'],
      ] as const) {
        await storeEvent(store, incoming(id));
        await setState(store, id, status, { attempts: 10, last_error: 'x' });
        await markHandlerCompleted(store.db, { account: 'default', eventId: id }, 'h1');
      }
      expect((await replayEvents(store, { status: 'dead' })).sort()).toEqual(['d1', 'd2']);
      expect(await replayEvents(store, { eventIds: ['ok', 'busy', 'missing'] })).toEqual(['ok']);
      const d1 = await getEvent(store, 'd1');
      expect(d1).toMatchObject({ status: 'pending', attempts: 0, completedHandlers: ['h1'] });
      expect(await getEvent(store, 'ok')).toMatchObject({ status: 'pending', completedHandlers: [] });
      expect(await getEvent(store, 'busy')).toMatchObject({ status: 'processing', attempts: 10 });
    });
  });

  describe.skipIf(!backend.available)('migrations', () => {
    it('applies each file once and records its checksum; a second run applies nothing', async () => {
      store = await backend.open({ migrated: false });
      const first = await migrate(store);
      expect(first.applied).toEqual(
        readdirSync(MIGRATIONS_DIR)
          .filter((f) => f.endsWith('.sql'))
          .sort(),
      );
      const second = await migrate(store);
      expect(second.applied).toEqual([]);
      expect(second.alreadyApplied).toEqual(first.applied);
      const { rows } = await sql<{ checksum: string }>`select checksum from ${sql.raw(`"${store.schema}".schema_migrations`)}`.execute(
        store.db,
      );
      expect(rows.map((r) => r.checksum)).toEqual(readMigrations().map((m) => m.checksum));
    });

    it('refuses an applied migration that was edited, and leaves the schema as it was', async () => {
      store = await backend.open({ migrated: false });
      const dir = mkdtempSync(join(tmpdir(), 'payhooks-mig-'));
      copyFileSync(join(MIGRATIONS_DIR, '001_inbox.sql'), join(dir, '001_inbox.sql'));
      await migrate(store, readMigrations(dir));
      writeFileSync(join(dir, '001_inbox.sql'), '-- edited\n', { flag: 'a' });
      writeFileSync(join(dir, '002_extra.sql'), 'create table extra (id int);\n');
      await expect(migrate(store, readMigrations(dir))).rejects.toThrow(MigrationChecksumError);
      await expect(migrate(store, readMigrations(dir))).rejects.toThrow(/001_inbox\.sql was edited after it was applied/);
      const { rows } = await sql<{
        n: number;
      }>`select count(*)::int as n from information_schema.tables where table_schema = ${store.schema} and table_name = 'extra'`.execute(
        store.db,
      );
      expect(rows[0]?.n).toBe(0);
    });

    it('rolls back a failing migration whole', async () => {
      store = await backend.open({ migrated: false });
      const dir = mkdtempSync(join(tmpdir(), 'payhooks-mig-'));
      writeFileSync(join(dir, '001_ok.sql'), 'create table ok_table (id int);\n');
      writeFileSync(join(dir, '002_bad.sql'), 'create table bad_table (id int);\nselect no_such_function();\n');
      await expect(migrate(store, readMigrations(dir))).rejects.toThrow(/no_such_function/);
      const { rows } = await sql<{
        n: number;
      }>`select count(*)::int as n from information_schema.tables where table_schema = ${store.schema}`.execute(store.db);
      expect(rows[0]?.n ?? 0).toBe(0);
    });
  });
});

it('rejects badly named migration files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-mig-'));
  writeFileSync(join(dir, 'init.sql'), 'select 1;');
  expect(() => readMigrations(dir)).toThrow(/not named like 001_description\.sql/);
});
