// The store's keys compare bytewise (migrations/027): every text column an index holds, and every column that holds
// one of the keys anywhere, is COLLATE "C", in the partitions made after the migration too. A column left at the
// database's collation would not only compare slower: an index serves a comparison only under its own collation, so a
// join of it with a "C" column would read past the index it used to probe.
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import { backends, dispose } from '../helpers/stores.js';

/** The names of the keys, wherever a table holds them. */
const KEY_COLUMNS = ['event_id', 'account', 'resource_key', 'handler', 'sender_id', 'released_event_id'];

interface TextColumn {
  table: string;
  column: string;
  collation: string;
}

/** The text columns of the store's tables (partitions included) that an index holds or that are named as a key. */
async function keyColumns(store: PayhooksDatabase): Promise<TextColumn[]> {
  const { rows } = await sql<TextColumn>`
    select c.relname as table, a.attname as column, coll.collname as collation
      from pg_attribute a
      join pg_class c on c.oid = a.attrelid
      join pg_collation coll on coll.oid = a.attcollation
     where c.relnamespace = ${store.schema}::regnamespace and c.relkind in ('r', 'p')
       and a.attnum > 0 and not a.attisdropped and a.atttypid in ('text'::regtype, 'text[]'::regtype)
       and (a.attname = any(${KEY_COLUMNS}::text[])
            or exists (select 1 from pg_index i where i.indrelid = c.oid and a.attnum = any(i.indkey)))
     order by 1, 2`.execute(store.db);
  return rows;
}

describe.each(backends)('bytewise keys ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)('every key column is COLLATE "C", in the history partitions made after the migration too', async () => {
    store = await backend.open();
    const made = await ensureHistoryPartitions(store);
    expect(made.length, 'history partitions to look at').toBeGreaterThan(0);
    const columns = await keyColumns(store);
    const names = columns.map((c) => `${c.table}.${c.column}`);
    // Not vacuous: the queue's and the ledger's keys, the accounts' id and a partition's copy of the history's key.
    expect(names).toEqual(expect.arrayContaining(['inbox_queue.event_id', 'inbox_queue.account', 'event_ledger.event_id', 'accounts.id']));
    expect(
      names.some((name) => /^inbox_events_p\d/.test(name) && name.endsWith('.event_id')),
      names.join(' '),
    ).toBe(true);
    expect(columns.length).toBeGreaterThan(30);
    expect(columns.filter((c) => c.collation !== 'C')).toEqual([]);
  });
});
