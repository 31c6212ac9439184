import { type RawBuilder, sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { newEventChannel } from './inbox.js';
import type { EventStatus } from './schema.js';

/** The states a replay may select by: every finished or failed state (not `pending`, not `processing`). */
export type ReplayableStatus = Exclude<EventStatus, 'processing' | 'pending'>;

/**
 * The events a replay targets: given ids (optionally only while they are still in `status`), or every
 * event in a state.
 */
export type ReplaySelection =
  | { eventIds: readonly string[]; status?: ReplayableStatus | undefined }
  | { status: ReplayableStatus; eventType?: string | undefined };

/**
 * The condition of a selection, over `inbox_events`; events being processed (a queue row with a lease) are never
 * part of a replay.
 */
function replayable(store: PayhooksDatabase, which: ReplaySelection) {
  const byStatus = which.status === undefined ? sql<boolean>`true` : sql<boolean>`inbox_events.status = ${which.status}`;
  const byId = 'eventIds' in which ? sql<boolean>`inbox_events.event_id in (${sql.join([...which.eventIds])})` : sql<boolean>`true`;
  const byType = 'eventType' in which && which.eventType ? sql<boolean>`inbox_events.event_type = ${which.eventType}` : sql<boolean>`true`;
  const leased = sql<boolean>`exists (select 1 from ${sql.id(store.schema, 'inbox_queue')} q
    where q.event_id = inbox_events.event_id and q.lease_owner is not null)`;
  return sql<boolean>`(inbox_events.status <> 'processing' and ${byStatus} and ${byId} and ${byType} and not ${leased})`;
}

function isEmpty(which: ReplaySelection): boolean {
  return 'eventIds' in which && which.eventIds.length === 0;
}

/**
 * Puts events back in the queue, due now, with a fresh attempt count. Handlers that completed stay
 * completed (only the rest run), except for events already `done`, whose completion marks are cleared so
 * that a replay runs them again. Events being processed are left alone. One transaction; resolves to the
 * ids re-queued. With both `eventIds` and `status`, only those of the ids still in that state are re-queued
 * (how the CLI replays a state in batches without touching an event that left it meanwhile). Handlers that gave up
 * on an event (its dead letters) run again.
 *
 * @example
 * await replayEvents(store, { eventIds: ['evt_123'] });
 * await replayEvents(store, { status: 'dead' });
 * await replayEvents(store, { status: 'dead', eventType: 'INVOICE_PAID' });
 */
export async function replayEvents(store: PayhooksDatabase, which: ReplaySelection): Promise<string[]> {
  if (isEmpty(which)) return [];
  const selected = replayable(store, which);
  return store.db.transaction().execute(async (trx) => {
    // Completion marks go for events that were done (every handler runs again); given-up marks go for every replayed
    // event (the handlers that gave up run again; those that completed do not).
    await trx
      .deleteFrom('handler_runs')
      .where('event_id', 'in', trx.selectFrom('inbox_events').select('event_id').where(selected))
      .where((runs) =>
        runs.or([
          runs('outcome', '=', 'dead'),
          runs('event_id', 'in', trx.selectFrom('inbox_events').select('event_id').where('status', '=', 'done').where(selected)),
        ]),
      )
      .execute();
    const rows = await trx
      .updateTable('inbox_events')
      .set({ status: 'pending', attempts: 0, next_attempt_at: sql`now()`, processed_at: null })
      .where(selected)
      .returning(['event_id', 'seq', 'resource_key'])
      .execute();
    if (rows.length === 0) return [];
    // Back into the queue (or, for one still waiting there, due now with a fresh count).
    await sql`
      insert into ${sql.id(store.schema, 'inbox_queue')} (event_id, seq, resource_key)
      select * from unnest(${rows.map((r) => r.event_id)}::text[], ${rows.map((r) => String(r.seq))}::bigint[],
                           ${rows.map((r) => r.resource_key)}::text[])
      on conflict (event_id) do update set run_at = now(), attempts = 0, owed = null, parked = false where inbox_queue.lease_owner is null
    `.execute(trx);
    await sql`select pg_notify(${newEventChannel(store.schema)}, '')`.execute(trx);
    return rows.map((row) => row.event_id);
  });
}

/**
 * How many events {@link replayEvents} would re-queue now for `which` (those not being processed).
 *
 * @example
 * await countReplayable(store, { status: 'dead' }) // 3
 */
export async function countReplayable(store: PayhooksDatabase, which: ReplaySelection): Promise<number> {
  if (isEmpty(which)) return 0;
  const row = await store.db
    .selectFrom('inbox_events')
    .select(sql<number>`count(*)::int`.as('count'))
    .where(replayable(store, which))
    .executeTakeFirstOrThrow();
  return row.count;
}

/** A position in the inbox's order of arrival (`seq`, a bigint, as text). */
export type ArrivalPosition = string;

/**
 * The newest position in the inbox's order of arrival, or null when it is empty: the bound that keeps a
 * long replay from chasing events that arrive (or finish) while it runs.
 */
export async function newestArrival(store: PayhooksDatabase): Promise<ArrivalPosition | null> {
  const row = await store.db.selectFrom('inbox_events').select(sql<string | null>`max(seq)::text`.as('seq')).executeTakeFirstOrThrow();
  return row.seq;
}

/**
 * One page of the events {@link replayEvents} would re-queue for `which`, oldest first: those after `after`
 * and up to `through` (positions from a previous page and {@link newestArrival}). Paging by position visits
 * each event at most once, whatever the replay changes in between.
 *
 * @example
 * const page = await pageReplayable(store, { status: 'dead' }, { limit: 10 }); // a sample of the first ten
 */
export async function pageReplayable(
  store: PayhooksDatabase,
  which: ReplaySelection,
  page: { limit: number; after?: ArrivalPosition | undefined; through?: ArrivalPosition | undefined },
): Promise<{ eventId: string; position: ArrivalPosition }[]> {
  if (isEmpty(which)) return [];
  let query = store.db
    .selectFrom('inbox_events')
    .select(['event_id', sql<string>`seq::text`.as('position')])
    .where(replayable(store, which))
    .orderBy('seq')
    .limit(page.limit);
  if (page.after !== undefined) query = query.where(sql<boolean>`seq > ${page.after}::bigint`);
  if (page.through !== undefined) query = query.where(sql<boolean>`seq <= ${page.through}::bigint`);
  const rows = await query.execute();
  return rows.map((row) => ({ eventId: row.event_id, position: row.position }));
}

/** The sender retries for 2 s + 10 s + 5 min + 20 min + 1 h + 5 h + 1 d + 3 d (about 4 d 6.5 h) plus timeouts. */
export const SENDER_RETRY_HORIZON_MS = (4 * 24 + 7) * 3600 * 1000;

/** Throws unless `olderThanMs` reaches past the sender's retry horizon. */
export function assertPruneAge(olderThanMs: number): void {
  if (!(olderThanMs >= SENDER_RETRY_HORIZON_MS)) {
    throw new Error(
      `Refusing to prune events younger than the sender's retry horizon (4 days 7 hours): a pruned eventId could be delivered again and run twice. Use an age of at least 4d7h (e.g. --older-than 30d).`,
    );
  }
}

/**
 * Deletes finished events (`done`, `ignored`) received more than `olderThanMs` ago. Refuses an age inside
 * the sender's retry horizon: a pruned eventId could otherwise come back and run twice. Dead, invalid and
 * unfinished events are never pruned. Resolves to the number deleted.
 */
export async function pruneEvents(store: PayhooksDatabase, olderThanMs: number): Promise<number> {
  assertPruneAge(olderThanMs);
  const result = await store.db
    .deleteFrom('inbox_events')
    .where(prunable(ago(olderThanMs)))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

function ago(ms: number) {
  return sql<Date>`now() - make_interval(secs => ${ms / 1000})`;
}

/**
 * The moment before which events count as old enough to prune: `olderThanMs` before now, by the database's
 * clock. Taken once, so that a count, a sample and the batches of one prune agree. Refuses an age inside
 * the sender's retry horizon, as {@link pruneEvents} does.
 *
 * @example
 * const cutoff = await pruneCutoff(store, 30 * 86_400_000);
 */
export async function pruneCutoff(store: PayhooksDatabase, olderThanMs: number): Promise<Date> {
  assertPruneAge(olderThanMs);
  const row = await store.db.selectNoFrom(ago(olderThanMs).as('cutoff')).executeTakeFirstOrThrow();
  return new Date(row.cutoff);
}

// Finished events received before the cutoff, and never inside the retry horizon whatever cutoff is given.
function prunable(cutoff: Date | RawBuilder<Date>) {
  return sql<boolean>`(status in ('done', 'ignored') and received_at < least((${cutoff})::timestamptz, ${ago(SENDER_RETRY_HORIZON_MS)}))`;
}

/** How many finished events {@link pruneBatch} would delete for `cutoff` (from {@link pruneCutoff}). */
export async function countPrunable(store: PayhooksDatabase, cutoff: Date): Promise<number> {
  const row = await store.db
    .selectFrom('inbox_events')
    .select(sql<number>`count(*)::int`.as('count'))
    .where(prunable(cutoff))
    .executeTakeFirstOrThrow();
  return row.count;
}

/** The ids of the first `limit` events, oldest first, that a prune with `cutoff` would delete: a sample to show. */
export async function samplePrunable(store: PayhooksDatabase, cutoff: Date, limit: number): Promise<string[]> {
  const rows = await store.db.selectFrom('inbox_events').select('event_id').where(prunable(cutoff)).orderBy('seq').limit(limit).execute();
  return rows.map((row) => row.event_id);
}

/**
 * Deletes at most `limit` finished events received before `cutoff` (oldest first), in one statement, with
 * their handler runs; resolves to the number deleted. Call it until it returns 0 to prune in batches; it
 * never deletes inside the sender's retry horizon, whatever `cutoff` says.
 *
 * @example
 * const cutoff = await pruneCutoff(store, 30 * 86_400_000);
 * while ((await pruneBatch(store, cutoff, 500)) > 0);
 */
export async function pruneBatch(store: PayhooksDatabase, cutoff: Date, limit: number): Promise<number> {
  const result = await store.db
    .deleteFrom('inbox_events')
    .where('event_id', 'in', store.db.selectFrom('inbox_events').select('event_id').where(prunable(cutoff)).orderBy('seq').limit(limit))
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/**
 * Vacuums (and analyzes) the work queue. Every event leaves two or three dead row versions in `inbox_queue` (its
 * claim, lease extensions, its removal), and a claim walks the dead index entries at the front of the queue until
 * vacuum clears them; where autovacuum is off or falls behind, the claim slows as the history grows. The queue
 * holds only the backlog, so this is cheap. SKIP_LOCKED: when another worker is vacuuming it, this one returns.
 * Without ownership of the table Postgres skips it with a warning; nothing fails.
 *
 * @example
 * await vacuumQueue(store); // the worker does this every QUEUE_VACUUM_EVERY outcomes
 */
export async function vacuumQueue(store: PayhooksDatabase): Promise<void> {
  await sql`vacuum (analyze, skip_locked) ${sql.id(store.schema, 'inbox_queue')}`.execute(store.db);
}
