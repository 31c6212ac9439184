import { sql, type Transaction } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { PREPARED } from './prepared-statements.js';
import type { PayhooksTables } from './schema.js';
import { eventKey } from './accounts.js';
import type { EventRef } from './event-refs.js';

/**
 * Records that one handler completed. Pass the handler's own transaction to commit its writes and this mark
 * together; a repeat mark is a no-op.
 */
export async function markHandlerCompleted(
  db: PayhooksDatabase['db'] | Transaction<PayhooksTables>,
  event: EventRef,
  handler: string,
): Promise<void> {
  // The event's receipt time (the history's partition key) comes from the ledger: one probe of its primary key.
  await db
    .insertInto('handler_runs')
    .columns(['event_id', 'account', 'handler', 'received_at'])
    .expression((eb) =>
      eb
        .selectFrom('event_ledger')
        .select([eb.val(event.eventId).as('event_id'), 'account', eb.val(handler).as('handler'), 'first_received_at'])
        .where('event_id', '=', event.eventId)
        .where('account', '=', event.account),
    )
    .onConflict((c) => c.doNothing())
    .execute();
}

/**
 * Whether queue row `alias` is set aside behind a lease (claim.ts): parked, owing nothing, not leased. The predicate of
 * `inbox_queue_behind_idx` (migrations/013), which the outcome's wake and the heartbeat both look rows up by.
 */
function setAside(alias: string) {
  const row = sql.raw(alias);
  return sql`${row}.parked and ${row}.owed is null and ${row}.lease_owner is null`;
}

/** Whether any row of `queue` is set aside: one look at the (usually empty) index, rather than a probe per event. */
function anySetAside(queue: ReturnType<typeof sql.id>) {
  return sql`exists (select 1 from ${queue} b where b.parked and b.owed is null)`;
}

/** The tables an outcome batch writes, in `schema`. */
function outcomeTables(schema: string) {
  const table = (name: string) => sql.id(schema, name);
  return {
    attemptsTable: table('handler_attempts'),
    queue: table('inbox_queue'),
    events: table('inbox_events'),
    runs: table('handler_runs'),
    ledger: table('event_ledger'),
  };
}

/** The lease tokens of `items` as a bigint array (null where an item has none: the owner alone is compared). */
function tokens(items: readonly { leaseToken?: string | undefined }[]) {
  return sql`${items.map((item) => item.leaseToken ?? null)}::bigint[]`;
}

/**
 * Whether queue row `alias` is one of the `count` items of CTE `items` (columns event_id, account, lease_token) and
 * still holds the lease token its item was claimed under (an item without one: any). The items come from the
 * statement's own arrays, so nothing travels twice: the ids go in as an index condition whose length the planner cannot
 * see (one probe of the primary key each, as in `ofEvents` of event-refs.ts), and the whole keys with their tokens into
 * a jsonb object built once per statement (an InitPlan), which holds each row to its item's account and token by one
 * binary search. Passing the ids, keys and tokens again as arrays of their own (as this file once did) made the worker
 * write, and PostgreSQL parse, six more arrays per batch: the bind of an outcome batch of about 600 took 12 ms against 7
 * before accounts (log of statement times in a drain).
 *
 * `count` goes in as a parameter the planner folds (each call is planned for its own values): with none, the condition
 * is false before any row is read. Without it, the planner, which cannot see that the ids' subquery is empty, walked the
 * whole due index for a batch without retries: 26,000 rows filtered in 10 ms, for each outcome batch of a backlog
 * (auto_explain of a drain).
 */
function heldIn(items: string, alias: string, count: number) {
  const cte = sql.raw(items);
  const row = sql.raw(alias);
  const held = sql`(select jsonb_object_agg(i.account || chr(10) || i.event_id, coalesce(to_jsonb(i.lease_token), 'true'::jsonb))
                      from ${cte} i)`;
  return sql`(${count > 0}::boolean and ${row}.event_id = any(array(select i.event_id from ${cte} i))
          -- = any, not in: an in list repeats its left side, and the planner built the object once for each.
          and coalesce((${held} -> (${row}.account || chr(10) || ${row}.event_id)) = any(array['true'::jsonb, to_jsonb(${row}.lease_token)]), false))`;
}

/**
 * A condition holding history row `alias` to the receipt times of `items` (none when any item's time is unknown, and
 * one that no row meets when there is no item).
 * PostgreSQL prunes the partitions a join of the history reads at run time, row by row, but not those an UPDATE of the
 * partitioned history writes: the outcome's update probed the primary key of every partition for each event, so each
 * day of history kept made every outcome slower (a drain of 30,000 events over 30 daily partitions of 20,000 finished
 * events: PostgreSQL's CPU 168 to 201 µs per event against 104 to 139 with none). Bounds given as parameters let the
 * planner (each call planned for its own values) keep the partitions that hold them only, which it then alone locks. A
 * Date holds milliseconds and the stored time microseconds (pg's parse cuts the rest), hence the margin.
 */
function receivedWithin(items: readonly { receivedAt?: Date | undefined }[], alias: string) {
  let first = Number.POSITIVE_INFINITY;
  let last = Number.NEGATIVE_INFINITY;
  for (const { receivedAt } of items) {
    const at = receivedAt instanceof Date ? receivedAt.getTime() : Number.NaN;
    if (Number.isNaN(at)) return sql`true`;
    first = Math.min(first, at);
    last = Math.max(last, at);
  }
  const row = sql.raw(alias);
  // No item: no partition to keep. A plain false goes to the join, not to the history's own conditions, and the update
  // kept (and locked) every partition; no partition holds a null time (the column is NOT NULL), so this keeps none.
  if (items.length === 0) return sql`${row}.received_at is null`;
  return sql`${row}.received_at between ${new Date(first - 1).toISOString()}::timestamptz and ${new Date(last + 1).toISOString()}::timestamptz`;
}

/** Texts as a text[] parameter. */
const texts = (values: (string | null)[]) => sql`${values}::text[]`;
/** Times as a timestamptz[] parameter (null where undefined). */
const times = (values: (Date | undefined)[]) => sql`${values.map((value) => value?.toISOString() ?? null)}::timestamptz[]`;

/**
 * The `marks_in` and `marks` steps of {@link recordOutcomes}: handler marks (completed, with the run's timing, or given
 * up), one `handler_runs` row each, each under its lease token when it has one (fenced).
 */
function insertMarks(store: PayhooksDatabase, marks: readonly Extract<FencedOutcome, { kind: 'completed' | 'gaveUp' }>[]) {
  const { runs, ledger, queue } = outcomeTables(store.schema);
  return sql`marks_in as (
      select * from unnest(${texts(marks.map((m) => m.eventId))}, ${texts(marks.map((m) => m.account))},
                           ${texts(marks.map((m) => m.handler))},
                           ${texts(marks.map((m) => (m.kind === 'gaveUp' ? 'dead' : 'done')))},
                           ${texts(marks.map((m) => (m.kind === 'gaveUp' ? m.error : null)))},
                           ${times(marks.map((m) => (m.kind === 'completed' ? m.run?.startedAt : undefined)))},
                           ${times(marks.map((m) => (m.kind === 'completed' ? m.run?.endedAt : undefined)))},
                           ${sql`${marks.map((m) => (m.kind === 'completed' ? (m.run?.attempt ?? null) : null))}::int[]`},
                           ${tokens(marks)})
               as m(event_id, account, handler, outcome, error, started_at, ended_at, attempt, lease_token)
    ),
    marks as (
      -- The receipt time (partition key) of each from the ledger, one probe of its primary key per mark (a join would
      -- let the planner, which cannot count an unnest's rows, hash the whole ledger: every event ever received); an
      -- event the ledger does not know is not marked.
      insert into ${runs} (event_id, account, handler, received_at, outcome, error, started_at, completed_at, attempt)
      select m.event_id, m.account, m.handler, m.received_at, m.outcome, m.error, m.started_at, coalesce(m.ended_at, now()), m.attempt
        from (select m.*, (select l.first_received_at from ${ledger} l where l.event_id = m.event_id and l.account = m.account)
                            as received_at
                from marks_in m
              offset 0) m
       where m.received_at is not null
         -- Fenced: a mark under a lease token only while the queue row holds it (the next claim issues another). Most
         -- marks come with their event's finish, whose row this statement releases under the same token: those are
         -- held, and the queue is not read again for them (an or stops at the first true; the lookup of the rest is
         -- made only if a row needs it). The others are found by heldIn, one probe of the primary key each: as an
         -- EXISTS per mark, the planner (the queue's statistics taken while it was nearly empty) hashed the whole queue
         -- for every batch.
         and (m.lease_token is null
              or (m.event_id, m.account, m.lease_token) in (select r.event_id, r.account, r.lease_token from released r)
              or (m.event_id, m.account) in (select q.event_id, q.account from ${queue} q where ${heldIn('marks_in', 'q', marks.length)}))
      on conflict do nothing
    )`;
}

/** A final state an event leaves the queue in. */
export type FinalStatus = 'done' | 'ignored' | 'invalid' | 'dead' | 'needs-review';

/** What a worker records for events it holds a lease on; see {@link recordOutcomes}. */
export type Outcome =
  /**
   * A handler completed: it will not run again for this event (also recorded without a lease). With `run`, its start,
   * end and attempt are kept on the same `handler_runs` row (the usual run writes one row).
   */
  | { kind: 'completed'; account: string; eventId: string; handler: string; run?: HandlerRun | undefined }
  /**
   * A handler gave up on the event (a dead letter, or the event's last attempt): it will not run again for it until a
   * replay, whatever happens to the other handlers (also recorded without a lease).
   */
  | { kind: 'gaveUp'; account: string; eventId: string; handler: string; error: string }
  /** The event is finished: it leaves the queue in `status`. */
  | { kind: 'finished'; account: string; eventId: string; status: FinalStatus; lastError: string | null }
  /**
   * Handlers failed and will be retried: the event goes back to waiting, due after `delayMs`, owing `owed` (the
   * failed handlers and those it could not run yet; null: every handler, when the failure was outside them).
   */
  | { kind: 'retry'; account: string; eventId: string; delayMs: number; lastError: string; owed: string[] | null }
  /**
   * Nothing failed, but `owed` could not run yet: an earlier event of the resource still owes them. The event goes
   * back to waiting with its attempt given back, due when the earliest of those earlier events is, and at once when
   * one of them settles a handler.
   */
  | { kind: 'park'; account: string; eventId: string; owed: string[]; lastError: string | null }
  /**
   * One run of a handler for the event, kept as a row of `handler_attempts` (also recorded without a lease): when it
   * started and ended, and whether it completed (inside its own transaction, whose mark has no timing) or failed (with
   * the error, capped).
   */
  | ({ kind: 'attempt'; account: string; eventId: string; handler: string; error: string | null } & HandlerRun & IssueKey);

/**
 * What groups a failed attempt into an issue (migrations/020): with both, a failure counts towards the issue of
 * (handler, `errorClass`, `eventType`); without, it is kept as an attempt only.
 */
export interface IssueKey {
  /** The thrown error's class (worker/handler-errors.ts `errorClassOf`). */
  errorClass?: string | undefined;
  eventType?: string | undefined;
}

/**
 * What a worker records, with the token of the lease it claimed the event under (the claimed event's `leaseToken`):
 * given, a finish, retry, park or completion mark is written only while the queue row still holds that token (fencing,
 * migrations/019), and a fenced one is answered false. Without it (a caller outside the worker), the lease's owner alone
 * is compared, as before. With the event's receipt time too (the claimed event's `receivedAt`, the history's partition
 * key), a finish or requeue touches the history's partitions that hold the batch's times only ({@link receivedWithin}).
 */
export type FencedOutcome = Outcome & { leaseToken?: string | undefined; receivedAt?: Date | undefined };

/** When a handler ran for an event, in which of its attempts. */
export interface HandlerRun {
  attempt: number;
  startedAt: Date;
  endedAt: Date;
}

/**
 * Records a batch of outcomes for `workerId` in one statement: handler marks (completed, with the run's timing, or
 * given up), the handlers' other runs (one `handler_attempts` row each: failures), finished events
 * (out of the queue, their state, attempts and error onto the inbox row), retries and parks (back to waiting, with
 * what they owe and the error). A finish, retry or park counts only while the event's lease is still this worker's:
 * resolves to one boolean per outcome, false where the lease had been lost (another worker took the event after it
 * ran out). Marks and attempts are always recorded.
 *
 * The later events of a resource that wait on an earlier one (parked) follow its outcome in the same statement: when it
 * finishes, or settles one of the handlers it owed, they are due at once; when it is only retried, they wait for its
 * next run rather than wake to find nothing they may run. The next of the events a claim set aside behind a lease (never
 * run, waiting only for the leased one) is due at once after any outcome of an earlier event of its key.
 *
 * @example
 * await recordOutcomes(store, 'host:1', [{ kind: 'finished', account: 'default', eventId: 'evt_1', status: 'done', lastError: null }]); // [true]
 */
export async function recordOutcomes(store: PayhooksDatabase, workerId: string, outcomes: readonly FencedOutcome[]): Promise<boolean[]> {
  const marks = outcomes.filter((o) => o.kind === 'completed' || o.kind === 'gaveUp');
  const finished = outcomes.filter((o) => o.kind === 'finished');
  const requeues = outcomes.filter((o) => o.kind === 'retry' || o.kind === 'park');
  const attempts = outcomes.filter((o) => o.kind === 'attempt');
  const { queue, events } = outcomeTables(store.schema);
  // One statement whatever the mix, with its rows passed as arrays: the cost per event is a few rows, not a round trip.
  // A requeue's owed set travels as a JSON array (arrays of arrays must be rectangular).
  const { rows } = await sql<{ event_id: string; account: string; kind: 'finished' | 'requeued' }>`${PREPARED}
    with finished as (
      select * from unnest(${texts(finished.map((f) => f.eventId))}, ${texts(finished.map((f) => f.account))},
                           ${texts(finished.map((f) => f.status))}, ${texts(finished.map((f) => f.lastError))},
                           ${tokens(finished)})
               as f(event_id, account, status, last_error, lease_token)
    ),
    released as (
      -- By the ids as an index condition (heldIn), not a join with the list, which the planner may answer with a scan of
      -- the whole queue or a comparison of every pair.
      delete from ${queue} q
       where ${heldIn('finished', 'q', finished.length)} and q.lease_owner = ${workerId}
      returning q.event_id, q.account, q.attempts, q.resource_key, q.seq, q.received_at, q.lease_token
    ),
    ${insertMarks(store, marks)},
    ${issuesSeen(store, attempts)},
    ${attemptsTried(store, attempts)},
    recorded as (
      update ${events} e
         set status = f.status, last_error = f.last_error, attempts = r.attempts, processed_at = now()
        from released r join finished f on f.event_id = r.event_id and f.account = r.account
       where e.event_id = r.event_id and e.account = r.account and e.received_at = r.received_at and ${receivedWithin(finished, 'e')}
      returning e.event_id, e.account
    ),
    requeues as (
      select r.event_id, r.account, r.delay_s, r.last_error, r.parked, r.lease_token,
             case when r.owed is not null then array(select jsonb_array_elements_text(r.owed::jsonb)) end as owed
        from unnest(${texts(requeues.map((r) => r.eventId))}, ${texts(requeues.map((r) => r.account))},
                    ${sql`${requeues.map((r) => (r.kind === 'retry' ? r.delayMs / 1000 : 0))}::float8[]`},
                    ${texts(requeues.map((r) => r.lastError))},
                    ${sql`${requeues.map((r) => r.kind === 'park')}::boolean[]`},
                    ${texts(requeues.map((r) => (r.owed === null ? null : JSON.stringify(r.owed))))},
                    ${tokens(requeues)})
             as r(event_id, account, delay_s, last_error, parked, owed, lease_token)
    ),
    -- What each requeued event owed before this run (the statement's snapshot): whether it settled a handler.
    owed_before as (
      select q.event_id, q.account, q.owed from ${queue} q join requeues r on r.event_id = q.event_id and r.account = q.account
       where ${heldIn('requeues', 'q', requeues.length)} and q.lease_owner = ${workerId}
    ),
    requeued as (
      update ${queue} q
         set lease_owner = null,
             owed = r.owed,
             parked = r.parked,
             -- A park ran nothing that failed: the attempt is given back, as for an event given back unstarted.
             attempts = case when r.parked then greatest(q.attempts - 1, 0) else q.attempts end,
             run_at = case
               when not r.parked then now() + make_interval(secs => r.delay_s)
               else coalesce((select min(o.run_at) from ${queue} o
                               where o.resource_key = q.resource_key and o.account = q.account and o.seq < q.seq
                                 and o.lease_owner is null
                                 and (o.owed is null or o.owed && r.owed)), now())
             end
        from requeues r
       where q.event_id = r.event_id and q.account = r.account and ${heldIn('requeues', 'q', requeues.length)} and q.lease_owner = ${workerId}
      returning q.event_id, q.account, q.attempts, q.run_at, q.resource_key, q.seq, q.owed, q.received_at
    ),
    noted as (
      update ${events} e
         set last_error = r.last_error, attempts = q.attempts, next_attempt_at = q.run_at
        from requeued q join requeues r on r.event_id = q.event_id and r.account = q.account
       where e.event_id = q.event_id and e.account = q.account and e.received_at = q.received_at and ${receivedWithin(requeues, 'e')}
      returning e.event_id, e.account
    ),
    -- Per key, the event whose outcome this is: did it settle any handler it owed (or leave the queue)?
    settled as (
      select resource_key, account, seq, true as progress, null::timestamptz as next_run from released where resource_key is not null
      union all
      select q.resource_key, q.account, q.seq, coalesce(b.owed is null or not (b.owed <@ q.owed), false), q.run_at
        from requeued q join owed_before b on b.event_id = q.event_id and b.account = q.account
       where q.resource_key is not null
    ),
    followers as (
      update ${queue} p
         set run_at = case when s.progress then least(p.run_at, now()) else greatest(p.run_at, s.next_run) end,
             parked = not s.progress
        from settled s
       where p.resource_key = s.resource_key and p.account = s.account and p.seq > s.seq and p.owed is not null and p.parked
         and p.lease_owner is null
    ),
    -- The next event set aside behind a lease (claim.ts), due now that an earlier event of its key has an outcome: the
    -- others stay aside, and its own claim sets aside whatever came since.
    next_behind as (
      select n.event_id, n.account
        from settled s
        cross join lateral (
          select p.event_id, p.account from ${queue} p
           where p.resource_key = s.resource_key and p.account = s.account and p.seq > s.seq and ${setAside('p')}
           order by p.seq
           limit 1) n
       where ${anySetAside(queue)}
    ),
    woken as (
      -- The conditions again, on the row as it is when locked: another statement may have claimed it meanwhile.
      update ${queue} p
         set parked = false, run_at = now()
       where p.event_id = any(array(select event_id from next_behind))
         and (p.event_id, p.account) in (select event_id, account from next_behind) and ${setAside('p')}
    )
    select event_id, account, 'finished' as kind from recorded
    union all
    select event_id, account, 'requeued' as kind from noted
  `.execute(store.db);
  const held = new Set(rows.map((row) => `${row.kind}:${eventKey(row.account, row.event_id)}`));
  return outcomes.map((outcome) => {
    if (outcome.kind === 'completed' || outcome.kind === 'gaveUp' || outcome.kind === 'attempt') return true;
    return held.has(`${outcome.kind === 'finished' ? 'finished' : 'requeued'}:${eventKey(outcome.account, outcome.eventId)}`);
  });
}

/** A handler's run, as {@link recordOutcomes} records it. */
type AttemptOutcome = Extract<Outcome, { kind: 'attempt' }>;

/**
 * The `tried` CTE of {@link recordOutcomes}: one `handler_attempts` row per run, its receipt time (the partition key)
 * from the ledger, one probe of its primary key each; a failure carries the id of the issue `seen` counted it into.
 */
function attemptsTried(store: PayhooksDatabase, attempts: readonly AttemptOutcome[]) {
  const { attemptsTable, ledger } = outcomeTables(store.schema);
  const failed = <T>(a: AttemptOutcome, value: T) => (a.error === null ? null : (value ?? null));
  return sql`tried as (
      insert into ${attemptsTable}
             (event_id, account, received_at, handler, attempt, started_at, ended_at, outcome, error, issue_id)
      select a.event_id, a.account, a.received_at, a.handler, a.attempt, a.started_at, a.ended_at,
             case when a.error is null then 'completed' else 'failed' end, a.error, s.id
        from (select a.*, (select l.first_received_at from ${ledger} l
                            where l.event_id = a.event_id and l.account = a.account) as received_at
                from unnest(${texts(attempts.map((a) => a.eventId))}, ${texts(attempts.map((a) => a.account))},
                            ${texts(attempts.map((a) => a.handler))},
                            ${sql`${attempts.map((a) => a.attempt)}::int[]`}, ${times(attempts.map((a) => a.startedAt))},
                            ${times(attempts.map((a) => a.endedAt))}, ${texts(attempts.map((a) => a.error))},
                            ${texts(attempts.map((a) => failed(a, a.errorClass)))}, ${texts(attempts.map((a) => failed(a, a.eventType)))})
                     as a(event_id, account, handler, attempt, started_at, ended_at, error, error_class, event_type)
              offset 0) a
        left join seen s on s.handler = a.handler and s.error_class = a.error_class and s.event_type = a.event_type
       where a.received_at is not null
    )`;
}

/**
 * The `seen` CTE of {@link recordOutcomes}: the batch's failures counted into their issues (migrations/020 argues
 * why here), one upsert of the batch's distinct (handler, error class, event type), in key order so that two batches
 * lock shared issues in the same order. A resolved issue that fails again is open again (and to be told again); an
 * acknowledged or ignored one keeps its state. Returns each issue's id for the attempt rows to carry.
 */
function issuesSeen(store: PayhooksDatabase, attempts: readonly AttemptOutcome[]) {
  const failures = attempts.filter((a) => a.error !== null && a.errorClass !== undefined && a.eventType !== undefined);
  const issues = sql.id(store.schema, 'issues');
  const textsOf = (values: (string | undefined)[]) => texts(values.map((v) => v ?? null));
  return sql`seen as (
      insert into ${issues} as i (handler, error_class, event_type, first_seen_at, last_seen_at, failures, last_error, opened_at, state_at)
      select f.handler, f.error_class, f.event_type, min(f.ended_at), max(f.ended_at), count(*),
             (array_agg(f.error order by f.ended_at desc))[1], now(), now()
        from unnest(${texts(failures.map((f) => f.handler))}, ${textsOf(failures.map((f) => f.errorClass))},
                    ${textsOf(failures.map((f) => f.eventType))},
                    ${sql`${failures.map((f) => f.endedAt.toISOString())}::timestamptz[]`}, ${texts(failures.map((f) => f.error))})
             as f(handler, error_class, event_type, ended_at, error)
       group by f.handler, f.error_class, f.event_type
       order by f.handler, f.error_class, f.event_type
      on conflict (handler, error_class, event_type) do update
         set last_seen_at = greatest(i.last_seen_at, excluded.last_seen_at),
             failures = i.failures + excluded.failures,
             last_error = excluded.last_error,
             state = case when i.state = 'resolved' then 'open' else i.state end,
             state_at = case when i.state = 'resolved' then now() else i.state_at end,
             opened_at = case when i.state = 'resolved' then now() else i.opened_at end,
             notified_at = case when i.state = 'resolved' then null else i.notified_at end,
             reopened = i.reopened + case when i.state = 'resolved' then 1 else 0 end
      returning i.id, i.handler, i.error_class, i.event_type
    )`;
}

/**
 * Pushes the leases of `events` forward by `leaseMs`, in one statement; resolves to the lease token of each event still
 * held by `workerId`, by its key ({@link eventKey}). An event missing from it was taken by another worker after its
 * lease ran out; one whose token differs was claimed again since (by this worker too: a run holding the old token
 * must not take the new lease for its own). The events a claim set aside behind one of them (claim.ts) stay aside
 * until the new end of its lease: a run longer than its first lease does not leave them due, for every claim to walk
 * while it runs.
 *
 * @example
 * const held = await extendLeases(store, 'host:1', [{ account: 'default', eventId: 'evt_1', leaseToken: '42' }], 60_000);
 * held.get(eventKey('default', 'evt_1')) === '42'; // still this run's lease
 */
export async function extendLeases(
  store: PayhooksDatabase,
  workerId: string,
  events: readonly (EventRef & { leaseToken?: string | undefined })[],
  leaseMs: number,
): Promise<Map<string, string>> {
  if (events.length === 0) return new Map();
  const { queue } = outcomeTables(store.schema);
  const { rows } = await sql<{ event_id: string; account: string; lease_token: string }>`
    with held as (
      select * from unnest(${texts(events.map((e) => e.eventId))}, ${texts(events.map((e) => e.account))}, ${tokens(events)})
               as i(event_id, account, lease_token)
    ),
    extended as (
      update ${queue} q
         set run_at = now() + make_interval(secs => ${leaseMs / 1000})
         -- Fenced: only the lease this worker claimed with (a heartbeat never extends a lease issued since).
       where ${heldIn('held', 'q', events.length)} and q.lease_owner = ${workerId}
      returning q.event_id, q.account, q.resource_key, q.seq, q.run_at, q.lease_token
    ),
    kept_aside as (
      update ${queue} f
         set run_at = e.run_at
        from extended e
       where f.resource_key = e.resource_key and f.account = e.account and f.seq > e.seq and ${setAside('f')}
         and f.run_at < e.run_at and ${anySetAside(queue)}
    )
    select event_id, account, lease_token::text from extended
  `.execute(store.db);
  return new Map(rows.map((row) => [eventKey(row.account, row.event_id), row.lease_token]));
}

/**
 * Gives leases back on shutdown so other workers need not wait for them to expire. An event whose handlers
 * never started gets its attempt back; one that was interrupted keeps it.
 */
export async function releaseLeases(
  store: PayhooksDatabase,
  workerId: string,
  events: (EventRef & { started: boolean })[],
): Promise<number> {
  if (events.length === 0) return 0;
  const { queue } = outcomeTables(store.schema);
  const result = await sql`
    update ${queue} q
       set lease_owner = null, run_at = now(), attempts = case when h.started then q.attempts else greatest(q.attempts - 1, 0) end
      from unnest(${events.map((e) => e.eventId)}::text[], ${events.map((e) => e.account)}::text[],
                  ${events.map((e) => e.started)}::boolean[]) as h(event_id, account, started)
     where q.event_id = h.event_id and q.account = h.account and q.lease_owner = ${workerId}
  `.execute(store.db);
  return Number(result.numAffectedRows ?? 0n);
}

/**
 * How one handler settled an event: `done`, `dead` (it gave up), or null while it has not (yet) settled it.
 *
 * @example
 * await handlerOutcome(store.db, { account: 'default', eventId: 'evt_1' }, 'mirror') // 'done' once the mirror's write committed
 */
export async function handlerOutcome(db: PayhooksDatabase['db'], event: EventRef, handler: string): Promise<'done' | 'dead' | null> {
  const row = await db
    .selectFrom('handler_runs')
    .select('outcome')
    .where('event_id', '=', event.eventId)
    .where('account', '=', event.account)
    .where('handler', '=', handler)
    .executeTakeFirst();
  return (row?.outcome as 'done' | 'dead' | undefined) ?? null;
}
