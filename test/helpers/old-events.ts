import { sql } from 'kysely';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { backdate, putUnorderedEvents } from './inbox.js';

/**
 * Stores `count` INVOICE_PAID events named `<prefix>_00000`… as a worker leaves them done (out of the queue, their
 * handler `noop` completed), received and finished `ageDays` ago: what a prune with a shorter age deletes and a
 * replay of `done` events re-queues. Resolves to their ids.
 */
export async function oldDoneEvents(store: PayhooksDatabase, prefix: string, count: number, ageDays = 40): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `${prefix}_${String(i).padStart(5, '0')}`);
  await putUnorderedEvents(store, ids);
  const age = sql`now() - make_interval(days => ${ageDays})`;
  await backdate(store, ids, age);
  await sql`update ${sql.id(store.schema, 'inbox_events')} set status = 'done', attempts = 1,
    processed_at = ${age} where event_id = any(${ids}::text[])`.execute(store.db);
  await sql`delete from ${sql.id(store.schema, 'inbox_queue')} where event_id = any(${ids}::text[])`.execute(store.db);
  // The account from the ledger: the outcome's key holds it (migrations/018), and no column defaults it.
  await sql`insert into ${sql.id(store.schema, 'handler_runs')} (event_id, account, handler, received_at)
    select event_id, account, 'noop', first_received_at from ${sql.id(store.schema, 'event_ledger')} where event_id = any(${ids}::text[])`.execute(
    store.db,
  );
  return ids;
}

/** How many of `ids` are `pending` with a queue row (re-queued and still waiting), and how many exist at all. */
export async function queuedOf(store: PayhooksDatabase, ids: readonly string[]): Promise<{ queued: number; existing: number }> {
  const row = await store.db
    .selectFrom('inbox_events as e')
    .leftJoin('inbox_queue as q', (join) => join.onRef('q.event_id', '=', 'e.event_id').onRef('q.account', '=', 'e.account'))
    .select([
      sql<number>`(count(*) filter (where e.status = 'pending' and q.event_id is not null))::int`.as('queued'),
      sql<number>`count(*)::int`.as('existing'),
    ])
    .where(sql<boolean>`e.event_id = any(${ids}::text[])`)
    .executeTakeFirstOrThrow();
  return row;
}
