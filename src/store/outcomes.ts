import { sql, type Transaction } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import type { PayhooksTables } from './schema.js';

/**
 * Records that one handler completed. Pass the handler's own transaction to commit its writes and this mark
 * together; a repeat mark is a no-op.
 */
export async function markHandlerCompleted(
  db: PayhooksDatabase['db'] | Transaction<PayhooksTables>,
  eventId: string,
  handler: string,
): Promise<void> {
  await db
    .insertInto('handler_runs')
    .values({ event_id: eventId, handler })
    .onConflict((c) => c.doNothing())
    .execute();
}

/** A final state an event leaves the queue in. */
export type FinalStatus = 'done' | 'ignored' | 'invalid' | 'dead';

/** What a worker records for events it holds a lease on; see {@link recordOutcomes}. */
export type Outcome =
  /** A handler completed: it will not run again for this event (also recorded without a lease). */
  | { kind: 'completed'; eventId: string; handler: string }
  /** The event is finished: it leaves the queue in `status`. */
  | { kind: 'finished'; eventId: string; status: FinalStatus; lastError: string | null }
  /** The event goes back to waiting, due after `delayMs`. */
  | { kind: 'retry'; eventId: string; delayMs: number; lastError: string };

/**
 * Records a batch of outcomes for `workerId` in one statement: completion marks, finished events (out of the queue,
 * their state, attempts and error onto the inbox row) and retries (back to waiting, with the error). A finish or
 * retry counts only while the event's lease is still this worker's: resolves to one boolean per outcome, false
 * where the lease had been lost (another worker took the event after it ran out). Marks are always recorded.
 *
 * @example
 * await recordOutcomes(store, 'host:1', [{ kind: 'finished', eventId: 'evt_1', status: 'done', lastError: null }]); // [true]
 */
export async function recordOutcomes(store: PayhooksDatabase, workerId: string, outcomes: readonly Outcome[]): Promise<boolean[]> {
  const marks = outcomes.filter((o) => o.kind === 'completed');
  const finished = outcomes.filter((o) => o.kind === 'finished');
  const retries = outcomes.filter((o) => o.kind === 'retry');
  const queue = sql.id(store.schema, 'inbox_queue');
  const events = sql.id(store.schema, 'inbox_events');
  const runs = sql.id(store.schema, 'handler_runs');
  const texts = (values: (string | null)[]) => sql`${values}::text[]`;
  // One statement whatever the mix, with its rows passed as arrays: the cost per event is a few rows, not a round trip.
  const { rows } = await sql<{ event_id: string; kind: 'finished' | 'retry' }>`
    with marks as (
      insert into ${runs} (event_id, handler)
      select m.event_id, m.handler
        from unnest(${texts(marks.map((m) => m.eventId))}, ${texts(marks.map((m) => m.handler))}) as m(event_id, handler)
       where exists (select 1 from ${events} e where e.event_id = m.event_id)
      on conflict do nothing
    ),
    finished as (
      select * from unnest(${texts(finished.map((f) => f.eventId))}, ${texts(finished.map((f) => f.status))},
                           ${texts(finished.map((f) => f.lastError))}) as f(event_id, status, last_error)
    ),
    released as (
      delete from ${queue} q using finished f
       where q.event_id = f.event_id and q.lease_owner = ${workerId}
      returning q.event_id, q.attempts
    ),
    recorded as (
      update ${events} e
         set status = f.status, last_error = f.last_error, attempts = r.attempts, processed_at = now()
        from released r join finished f on f.event_id = r.event_id
       where e.event_id = r.event_id
      returning e.event_id
    ),
    retries as (
      select * from unnest(${texts(retries.map((r) => r.eventId))}, ${sql`${retries.map((r) => r.delayMs / 1000)}::float8[]`},
                           ${texts(retries.map((r) => r.lastError))}) as r(event_id, delay_s, last_error)
    ),
    requeued as (
      update ${queue} q
         set lease_owner = null, run_at = now() + make_interval(secs => r.delay_s)
        from retries r
       where q.event_id = r.event_id and q.lease_owner = ${workerId}
      returning q.event_id, q.attempts, q.run_at
    ),
    noted as (
      update ${events} e
         set last_error = r.last_error, attempts = q.attempts, next_attempt_at = q.run_at
        from requeued q join retries r on r.event_id = q.event_id
       where e.event_id = q.event_id
      returning e.event_id
    )
    select event_id, 'finished' as kind from recorded
    union all
    select event_id, 'retry' as kind from noted
  `.execute(store.db);
  const held = new Set(rows.map((row) => `${row.kind}:${row.event_id}`));
  return outcomes.map((outcome) => outcome.kind === 'completed' || held.has(`${outcome.kind}:${outcome.eventId}`));
}

/**
 * Pushes the leases of `eventIds` forward by `leaseMs`, in one statement; resolves to those still held by
 * `workerId` (an event missing from it was taken by another worker after its lease ran out).
 *
 * @example
 * const held = await extendLeases(store, 'host:1', ['evt_1', 'evt_2'], 60_000);
 */
export async function extendLeases(
  store: PayhooksDatabase,
  workerId: string,
  eventIds: readonly string[],
  leaseMs: number,
): Promise<Set<string>> {
  if (eventIds.length === 0) return new Set();
  const rows = await store.db
    .updateTable('inbox_queue')
    .set({ run_at: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
    .where('event_id', '=', sql<string>`any(${[...eventIds]}::text[])`)
    .where('lease_owner', '=', workerId)
    .returning('event_id')
    .execute();
  return new Set(rows.map((row) => row.event_id));
}

/**
 * Gives leases back on shutdown so other workers need not wait for them to expire. An event whose handlers
 * never started gets its attempt back; one that was interrupted keeps it.
 */
export async function releaseLeases(
  store: PayhooksDatabase,
  workerId: string,
  events: { eventId: string; started: boolean }[],
): Promise<number> {
  if (events.length === 0) return 0;
  const queue = sql.id(store.schema, 'inbox_queue');
  const result = await sql`
    update ${queue} q
       set lease_owner = null, run_at = now(), attempts = case when h.started then q.attempts else greatest(q.attempts - 1, 0) end
      from unnest(${events.map((e) => e.eventId)}::text[], ${events.map((e) => e.started)}::boolean[]) as h(event_id, started)
     where q.event_id = h.event_id and q.lease_owner = ${workerId}
  `.execute(store.db);
  return Number(result.numAffectedRows ?? 0n);
}
