import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { dropHistoryPartitions } from './history-partitions.js';
import { newEventChannel } from './inbox.js';
import type { EventStatus } from './schema.js';
import { eventKey } from './accounts.js';
import { type EventRef, ofEvents } from './event-refs.js';

/** The states a replay may select by: every finished or failed state (not `pending`, not `processing`). */
export type ReplayableStatus = Exclude<EventStatus, 'processing' | 'pending'>;

/**
 * The states a replay by time selects when no state is given: the failed ones (docs/cli.md#replay). `done` and
 * `ignored` events are replayed only when asked for by name.
 */
export const FAILED_STATES = ['dead', 'invalid', 'needs-review'] as const satisfies readonly ReplayableStatus[];

/**
 * A replay's selection beyond a state (issue 50): events of a type, first received in a time window, on which a handler
 * failed (the selection's `account` narrows it further). Every filter given must hold.
 */
export interface ReplayFilter {
  /** Of this event type only. */
  eventType?: string | undefined;
  /** First received at or after this moment. */
  since?: Date | undefined;
  /** First received before this moment (exclusive). */
  until?: Date | undefined;
  /** Events on which this handler failed at least once (a failed run, or it gave up). */
  handler?: string | undefined;
}

/**
 * The events a replay targets: given ids (optionally only while they are still in `status`, or in one of several
 * states), every event in a state (narrowed by the filters), or every event of a time window (`since` and `until`,
 * narrowed likewise; without a state, those in a failed state, {@link FAILED_STATES}).
 */
export type ReplaySelection = (
  | { eventIds: readonly string[]; status?: ReplayableStatus | readonly ReplayableStatus[] | undefined }
  | { events: readonly EventRef[]; status?: ReplayableStatus | readonly ReplayableStatus[] | undefined }
  | ({ status: ReplayableStatus } & ReplayFilter)
  | ({ status?: ReplayableStatus | undefined; since: Date; until: Date } & ReplayFilter)
) & {
  /** Only this account's events; default every account's (an eventId given alone is replayed in each account that has it). */
  account?: string | undefined;
  /**
   * Forget the events' effect steps (docs/effects.md#replay), so that every `ctx.effect` step runs again, completed
   * ones included, and steps held for review are released. Default false: a completed step returns its recorded
   * result without being called again.
   */
  redoEffects?: boolean | undefined;
};

/** The states a selection takes events in; undefined: any but `processing` (named ids without a state). */
export function selectedStates(which: ReplaySelection): readonly ReplayableStatus[] | undefined {
  if (which.status !== undefined) return typeof which.status === 'string' ? [which.status] : which.status;
  return 'eventIds' in which || 'events' in which ? undefined : FAILED_STATES;
}

/**
 * The condition of a selection, over `inbox_events`; events being processed (a queue row with a lease) are never
 * part of a replay.
 */
function replayable(store: PayhooksDatabase, which: ReplaySelection) {
  const states = selectedStates(which);
  const byStatus = states === undefined ? sql<boolean>`true` : sql<boolean>`inbox_events.status in (${sql.join([...states])})`;
  const byId =
    'eventIds' in which
      ? sql<boolean>`inbox_events.event_id in (${sql.join([...which.eventIds])})`
      : 'events' in which
        ? ofEvents(which.events, 'inbox_events')
        : sql<boolean>`true`;
  const byAccount = which.account === undefined ? sql<boolean>`true` : sql<boolean>`inbox_events.account = ${which.account}`;
  const leased = sql<boolean>`exists (select 1 from ${sql.id(store.schema, 'inbox_queue')} q
    where q.event_id = inbox_events.event_id and q.account = inbox_events.account and q.lease_owner is not null)`;
  const filters = 'eventIds' in which || 'events' in which ? [sql<boolean>`true`] : filterConditions(store, which);
  return sql<boolean>`(inbox_events.status <> 'processing' and ${byStatus} and ${byId} and ${byAccount} and ${sql.join(filters, sql` and `)} and not ${leased})`;
}

/** The conditions of a {@link ReplayFilter}; `true` when it has none. */
function filterConditions(store: PayhooksDatabase, filter: ReplayFilter) {
  const conditions = [sql<boolean>`true`];
  if (filter.eventType) conditions.push(sql<boolean>`inbox_events.event_type = ${filter.eventType}`);
  // The partition key: a window reads only the partitions it overlaps.
  if (filter.since) conditions.push(sql<boolean>`inbox_events.received_at >= ${filter.since}`);
  if (filter.until) conditions.push(sql<boolean>`inbox_events.received_at < ${filter.until}`);
  if (filter.handler !== undefined)
    conditions.push(sql<boolean>`(exists (select 1 from ${sql.id(store.schema, 'handler_attempts')} a
        where a.event_id = inbox_events.event_id and a.account = inbox_events.account and a.received_at = inbox_events.received_at
          and a.handler = ${filter.handler} and a.outcome = 'failed')
      or exists (select 1 from ${sql.id(store.schema, 'handler_runs')} r
        where r.event_id = inbox_events.event_id and r.account = inbox_events.account and r.received_at = inbox_events.received_at
          and r.handler = ${filter.handler} and r.outcome = 'dead'))`);
  return conditions;
}

function isEmpty(which: ReplaySelection): boolean {
  return ('eventIds' in which && which.eventIds.length === 0) || ('events' in which && which.events.length === 0);
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
    // The events' rows are locked first, oldest first, before anything else of theirs is touched. A retention drop
    // (dropHistoryPartitions) takes the history's tables whole before it checks a partition and drops it: either it
    // dropped the event's partition before this statement (nothing is re-queued, nor reported), or it waits for this
    // transaction and then finds the event queued, and keeps the partition. Locking in one order also keeps two
    // replays from deadlocking each other. FOR UPDATE
    // re-checks the selection on the newest version of each row, so an event that left the state meanwhile is left.
    const locked = await trx
      .selectFrom('inbox_events')
      .select(['event_id', 'account', 'status'])
      .where(selected)
      .orderBy('seq')
      .forUpdate()
      .execute();
    if (locked.length === 0) return [];
    const refs = locked.map((row) => ({ account: row.account, eventId: row.event_id }));
    const done = locked.filter((row) => row.status === 'done').map((row) => ({ account: row.account, eventId: row.event_id }));
    // Completion marks go for events that were done (every handler runs again); given-up marks go for every replayed
    // event (the handlers that gave up run again; those that completed do not).
    if (which.redoEffects) await trx.deleteFrom('effect_steps').where(ofEvents(refs)).execute();
    await trx
      .deleteFrom('handler_runs')
      .where(ofEvents(refs))
      .where((runs) => runs.or([runs('outcome', '=', 'dead'), ofEvents(done)]))
      .execute();
    // Back into the queue (or, for one still waiting there, due now with a fresh count), with the receipt time as the
    // history row holds it: taken in SQL, since a JavaScript Date would cut it to the millisecond and the queue row
    // would no longer find its history row.
    const { rows } = await sql<{ event_id: string; account: string }>`
      with replayed as (
        update ${sql.id(store.schema, 'inbox_events')}
           set status = 'pending', attempts = 0, next_attempt_at = now(), processed_at = null
         where ${ofEvents(refs)}
        returning event_id, account, seq, resource_key, received_at
      ),
      queued as (
        insert into ${sql.id(store.schema, 'inbox_queue')} (event_id, account, seq, resource_key, received_at)
        select event_id, account, seq, resource_key, received_at from replayed
        on conflict (event_id, account) do update set run_at = now(), attempts = 0, owed = null, parked = false
         where inbox_queue.lease_owner is null
      )
      select event_id, account from replayed
    `.execute(trx);
    await sql`select pg_notify(${newEventChannel(store.schema)}, '')`.execute(trx);
    // In order of arrival, as locked: an UPDATE … RETURNING gives its rows in no promised order.
    const requeued = new Set(rows.map((row) => eventKey(row.account, row.event_id)));
    return refs.filter((ref) => requeued.has(eventKey(ref.account, ref.eventId))).map((ref) => ref.eventId);
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
): Promise<{ eventId: string; account: string; position: ArrivalPosition }[]> {
  if (isEmpty(which)) return [];
  let query = store.db
    .selectFrom('inbox_events')
    .select(['event_id', 'account', sql<string>`seq::text`.as('position')])
    .where(replayable(store, which))
    .orderBy('seq')
    .limit(page.limit);
  if (page.after !== undefined) query = query.where(sql<boolean>`seq > ${page.after}::bigint`);
  if (page.through !== undefined) query = query.where(sql<boolean>`seq <= ${page.through}::bigint`);
  const rows = await query.execute();
  return rows.map((row) => ({ eventId: row.event_id, account: row.account, position: row.position }));
}

/** What a replay would do, asked before it runs: see {@link previewReplay}. */
export interface ReplayPreview {
  /** How many events {@link replayEvents} would re-queue now. */
  count: number;
  /** The first of them in order of arrival, at most the sample size asked for. */
  sample: string[];
  /** The newest arrival position now ({@link newestArrival}): the bound to give each {@link replayBatch}. */
  through: ArrivalPosition | null;
  /** The effect steps of the selected events, by what the replay does with them (docs/effects.md#replay). */
  effects: ReplayEffects;
}

/** What a replay does with the effect steps of the events it re-queues. */
export interface ReplayEffects {
  /** Completed steps: skipped (their recorded result returned), or called again with `redoEffects`. */
  completed: number;
  /** Steps held for an operator: still held (resolve them), or called again with `redoEffects`. */
  needsReview: number;
  /** Steps that did not complete (failed, unknown, sent back by an operator): called on the next run either way. */
  notCompleted: number;
  /** Some of them, oldest event first: which step of which handler, and its state. */
  sample: { eventId: string; handler: string; step: string; state: string }[];
}

/**
 * How many events a replay of `which` would re-queue, a sample of their ids, and the bound that keeps a replay in
 * batches from chasing the events it re-queues (what `payhooks replay` shows before it asks).
 *
 * @example
 * const { count, sample, through } = await previewReplay(store, { status: 'dead' }, 10);
 */
export async function previewReplay(store: PayhooksDatabase, which: ReplaySelection, sampleSize: number): Promise<ReplayPreview> {
  const through = await newestArrival(store);
  const count = await countReplayable(store, which);
  const effects: ReplayEffects = { completed: 0, needsReview: 0, notCompleted: 0, sample: [] };
  if (count === 0) return { count, sample: [], through, effects };
  const page = await pageReplayable(store, which, { limit: sampleSize, through: through ?? undefined });
  return { count, sample: page.map((event) => event.eventId), through, effects: await replayEffects(store, which, sampleSize) };
}

/** The effect steps of a replay's selection, counted by state, with a sample (see {@link ReplayEffects}). */
async function replayEffects(store: PayhooksDatabase, which: ReplaySelection, sampleSize: number): Promise<ReplayEffects> {
  // inbox_events first: a statement locks its tables in the order it names them, and the history's order
  // (HISTORY_TABLES) is the one a retention drop takes them in.
  const selected = store.db
    .selectFrom('inbox_events')
    .innerJoin('effect_steps as s', (join) =>
      join.onRef('s.event_id', '=', 'inbox_events.event_id').onRef('s.account', '=', 'inbox_events.account'),
    )
    .where(replayable(store, which));
  const counts = await selected
    .select(['s.state', sql<number>`count(*)::int`.as('n')])
    .groupBy('s.state')
    .execute();
  const rows = await selected
    .select(['s.event_id', 's.handler', 's.step', 's.state'])
    .orderBy('inbox_events.seq')
    .orderBy('s.started_at')
    .limit(sampleSize)
    .execute();
  const of = (state: string) => counts.filter((c) => c.state === state).reduce((sum, c) => sum + c.n, 0);
  return {
    completed: of('completed'),
    needsReview: of('needs-review'),
    notCompleted: counts.reduce((sum, c) => sum + c.n, 0) - of('completed') - of('needs-review'),
    sample: rows.map((row) => ({ eventId: row.event_id, handler: row.handler, step: row.step, state: row.state })),
  };
}

/** One batch of a replay: see {@link replayBatch}. */
export interface ReplayBatch {
  /** The events of the selection the batch looked at; 0 when the replay has visited them all. */
  visited: number;
  /** The ids it re-queued (those still in the selection as the batch was written). */
  eventIds: string[];
  /** The arrival position of the last event visited, to pass as `after` to the next batch; null when none was. */
  last: ArrivalPosition | null;
}

/**
 * Re-queues the next `limit` events of `which` after `after` and up to `through`, oldest first, in one transaction:
 * how `payhooks replay` works through many events. An event that left the selection since it was paged is left as
 * it is; paging by position visits each event at most once.
 *
 * @example
 * const { through } = await previewReplay(store, which, 10);
 * for (let after, batch; (batch = await replayBatch(store, which, { limit: 500, after, through })).visited > 0; ) after = batch.last;
 */
export async function replayBatch(
  store: PayhooksDatabase,
  which: ReplaySelection,
  batch: { limit: number; after?: ArrivalPosition | undefined; through?: ArrivalPosition | undefined },
): Promise<ReplayBatch> {
  const page = await pageReplayable(store, which, batch);
  if (page.length === 0) return { visited: 0, eventIds: [], last: null };
  const eventIds = await replayEvents(store, {
    events: page,
    status: selectedStates(which),
    redoEffects: which.redoEffects,
  });
  return { visited: page.length, eventIds, last: page.at(-1)!.position };
}

/** The sender retries for 2 s + 10 s + 5 min + 20 min + 1 h + 5 h + 1 d + 3 d (about 4 d 6.5 h) plus timeouts. */
export const SENDER_RETRY_HORIZON_MS = (4 * 24 + 7) * 3600 * 1000;

/**
 * Throws unless `olderThanMs` is an age prune can take: a whole number of milliseconds of at least 0. There is no
 * floor at the sender's retry horizon any more: deduplication answers from the ledger (migrations/006), which prune
 * leaves alone, so a pruned eventId delivered again is still a duplicate.
 */
export function assertPruneAge(olderThanMs: number): void {
  if (!(Number.isFinite(olderThanMs) && olderThanMs >= 0)) {
    throw new RangeError(`The prune age must be a duration of at least 0 (e.g. --older-than 30d), not ${String(olderThanMs)}.`);
  }
}

/**
 * Retention by the partition: drops the history's partitions (bodies, outcomes, runs and attempts) that end more than
 * `olderThanMs` ago; a partition holding events that are not finished (dead, invalid, needs-review, or still queued)
 * is rebuilt with those alone, which stay until resolved (see dropHistoryPartitions). The eventIds stay in the
 * deduplication ledger, so a redelivery of a dropped event is still answered as a duplicate and not run. Resolves to
 * the number of events dropped.
 *
 * @example
 * await pruneEvents(store, 30 * 86_400_000); // what `history: { retention: { history: '30d' } }` does in serve, hourly
 */
export async function pruneEvents(store: PayhooksDatabase, olderThanMs: number): Promise<number> {
  const report = await dropHistoryPartitions(store, { before: await pruneCutoff(store, olderThanMs) });
  return report.dropped.reduce((sum, p) => sum + p.events, 0) + report.kept.reduce((sum, p) => sum + p.compacted, 0);
}

function ago(ms: number) {
  return sql<Date>`now() - make_interval(secs => ${ms / 1000})`;
}

/**
 * The moment before which history counts as old enough to drop: `olderThanMs` before now, by the database's clock.
 * Taken once, so that a preview and the drop that follows it agree.
 *
 * @example
 * const cutoff = await pruneCutoff(store, 30 * 86_400_000);
 */
export async function pruneCutoff(store: PayhooksDatabase, olderThanMs: number): Promise<Date> {
  assertPruneAge(olderThanMs);
  const row = await store.db.selectNoFrom(ago(olderThanMs).as('cutoff')).executeTakeFirstOrThrow();
  return new Date(row.cutoff);
}

/**
 * Vacuums (and analyzes) the work queue. Every event leaves two or three dead row versions in `inbox_queue` (its
 * claim, lease extensions, its removal), and a claim walks the dead index entries at the front of the queue until
 * vacuum clears them; where autovacuum is off or falls behind, the claim slows as the history grows. The queue
 * holds only the backlog, so this is cheap. SKIP_LOCKED: when another worker is vacuuming it, this one returns.
 * Without ownership of the table Postgres skips it with a warning; nothing fails. TRUNCATE false: giving the queue's
 * empty end back to the file system takes a lock that stops every claim and outcome, and a vacuum waits up to 5 s for
 * it (holding a pool connection); a draining queue would grow back at once. Autovacuum still gives the space back once
 * the queue stays small.
 *
 * @example
 * await vacuumQueue(store); // the worker does this every QUEUE_VACUUM_EVERY outcomes, and when idle
 */
export async function vacuumQueue(store: PayhooksDatabase): Promise<void> {
  await sql`vacuum (analyze, skip_locked, truncate false) ${sql.id(store.schema, 'inbox_queue')}`.execute(store.db);
}

/**
 * One account's finished events (`done`, `ignored`) received before `before`, counted: what {@link pruneAccount} would
 * delete.
 */
export async function countPrunableOfAccount(store: PayhooksDatabase, account: string, before: Date): Promise<number> {
  const row = await store.db
    .selectFrom('inbox_events')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('account', '=', account)
    .where('received_at', '<', before)
    .where('status', 'in', ['done', 'ignored'])
    .executeTakeFirstOrThrow();
  return row.n;
}

/**
 * Deletes one account's finished events (`done`, `ignored`) received before `before`, with their outcomes, attempts and
 * effect steps, `batch` events per transaction; resolves to how many went. Retention by the partition
 * ({@link pruneEvents}) drops every account's history at once; one account's goes row by row, so its space comes back
 * through vacuum, not at once. The ledger keeps their eventIds: a redelivery is still a duplicate.
 *
 * @example
 * await pruneAccount(store, 'gym-north', await pruneCutoff(store, 30 * 86_400_000));
 */
export async function pruneAccount(store: PayhooksDatabase, account: string, before: Date, batch = 1000): Promise<number> {
  let pruned = 0;
  for (;;) {
    const deleted = await store.db.transaction().execute(async (trx) => {
      // Locked oldest first, as a replay locks them: a replay of one of them at the same moment waits, then finds it gone.
      const rows = await trx
        .selectFrom('inbox_events')
        .select(['event_id', 'account', 'received_at'])
        .where('account', '=', account)
        .where('received_at', '<', before)
        .where('status', 'in', ['done', 'ignored'])
        .orderBy('seq')
        .limit(batch)
        .forUpdate()
        .skipLocked()
        .execute();
      if (rows.length === 0) return 0;
      const refs = rows.map((row) => ({ account: row.account, eventId: row.event_id }));
      // History tables in the order a retention drop takes them (HISTORY_TABLES), the events last.
      await trx.deleteFrom('handler_runs').where(ofEvents(refs)).execute();
      await trx.deleteFrom('handler_attempts').where(ofEvents(refs)).execute();
      await trx.deleteFrom('effect_steps').where(ofEvents(refs)).execute();
      await trx.deleteFrom('inbox_events').where(ofEvents(refs)).where('status', 'in', ['done', 'ignored']).execute();
      return rows.length;
    });
    pruned += deleted;
    if (deleted < batch) return pruned;
  }
}
