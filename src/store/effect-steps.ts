import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { replayEvents } from './maintenance.js';
import type { EffectStepState } from './schema.js';
import { type EventRef, ofEvents } from './event-refs.js';

/** Identifies one step: a named effect of one handler for one event. */
export interface StepRef {
  /** The event's account. */
  account: string;
  eventId: string;
  handler: string;
  step: string;
}

/** What {@link beginStep} records before a step's function runs. */
export interface StepIntent extends StepRef {
  /** The event's receipt time, kept with the row (the key of the history's time partitions). */
  receivedAt: Date;
  idempotencyKey: string;
  /** Whether the outside API applies a repeat of the key once. */
  idempotent: boolean;
  /** The event's attempt that runs it now. */
  attempt: number;
}

/**
 * What the worker does with a step, as {@link beginStep} decided it in the same statement that recorded it:
 * - `run`: call it (first time, after a failure, an operator's redo, or an unknown outcome of an idempotent step:
 *   `unknownBefore` says which);
 * - `completed`: it completed on an earlier attempt, here is its recorded result (JSON text, null when not kept);
 * - `review`: its outcome is unknown and it is not idempotent: held for an operator, not called.
 */
export type StepDecision =
  | { action: 'run'; unknownBefore: boolean; calls: number }
  | { action: 'completed'; result: string | null }
  | { action: 'review'; error: string | null };

/** The reason kept on a step whose outcome is unknown and that may not be called again on its own. */
export const UNKNOWN_OUTCOME =
  'Its outcome is unknown: it started and never recorded one (the process running it died, or lost its lease, between the call and its record), and it is not declared idempotent, so calling it again could do it twice.';

/**
 * Records the intent of a step before its function runs, and decides from what an earlier attempt recorded, in one
 * statement (the only one before the call): a new step, or one that failed or that an operator sent back (`redo`),
 * is marked started and run; a completed one returns its result; one found `started` by this later attempt has an
 * unknown outcome: run again with the same key when idempotent, otherwise marked `needs-review` and held.
 *
 * @example
 * const decision = await beginStep(store, { eventId: 'evt_1', handler: 'fees', step: 'late-fee', receivedAt, idempotencyKey: 'ph_…', idempotent: true, attempt: 2 });
 */
export async function beginStep(store: PayhooksDatabase, intent: StepIntent): Promise<StepDecision> {
  const steps = sql.id(store.schema, 'effect_steps');
  // `old` is the row as this statement found it (a CTE's snapshot), `up` what it wrote: an existing row is only
  // written where the step is to run again or goes to review; a completed one, or one already held, is left as it is.
  // Idempotent is what the row recorded or what this attempt declares: an undeclared step is recorded idempotent by
  // markStepIdempotent when its call carried its key, and this attempt's intent (undeclared, so false) must not
  // hide that, or a step killed after its keyed call would be held for review instead of called again.
  const { rows } = await sql<{
    before: EffectStepState | null;
    result: string | null;
    error: string | null;
    after: EffectStepState | null;
    calls: number | null;
  }>`
    with old as (
      select state, result, error from ${steps}
       where event_id = ${intent.eventId} and account = ${intent.account} and handler = ${intent.handler} and step = ${intent.step}
    ),
    up as (
      insert into ${steps} as s (event_id, account, received_at, handler, step, idempotency_key, idempotent, state, attempt)
      -- The stored receipt time, exact (the worker's copy has milliseconds only), from the ledger (one probe of its key);
      -- the worker's when the row is gone.
      values (${intent.eventId}, ${intent.account},
              coalesce((select first_received_at from ${sql.id(store.schema, 'event_ledger')}
                         where event_id = ${intent.eventId} and account = ${intent.account}),
                       ${intent.receivedAt.toISOString()}::timestamptz),
              ${intent.handler}, ${intent.step},
              ${intent.idempotencyKey}, ${intent.idempotent}, 'started', ${intent.attempt})
      on conflict (event_id, account, handler, step, received_at) do update
         set state = case when s.state = 'started' and not (s.idempotent or excluded.idempotent) then 'needs-review' else 'started' end,
             error = case when s.state = 'started' and not (s.idempotent or excluded.idempotent) then ${UNKNOWN_OUTCOME} else s.error end,
             calls = s.calls + case when s.state = 'started' and not (s.idempotent or excluded.idempotent) then 0 else 1 end,
             attempt = excluded.attempt,
             idempotent = s.idempotent or excluded.idempotent,
             started_at = case when s.state = 'started' and not (s.idempotent or excluded.idempotent) then s.started_at else now() end,
             ended_at = case when s.state = 'started' and not (s.idempotent or excluded.idempotent) then now() else null end
       where s.state in ('started', 'failed', 'redo')
      returning s.state, s.calls, s.error
    )
    select old.state as before, old.result, coalesce(up.error, old.error) as error, up.state as after, up.calls
      from (select 1) one left join old on true left join up on true
  `.execute(store.db);
  const row = rows[0];
  if (!row) throw new Error('beginStep: the statement returned no row');
  if (row.after === 'started') return { action: 'run', unknownBefore: row.before === 'started', calls: row.calls ?? 1 };
  if (row.after === 'needs-review' || row.before === 'needs-review') return { action: 'review', error: row.error };
  if (row.before === 'completed') return { action: 'completed', result: row.result };
  // Neither found nor written: another run inserted it between the snapshot and the insert (a lease lost meanwhile).
  throw new Error(
    `effect step ${JSON.stringify(intent.step)} of handler ${intent.handler} for event ${intent.eventId} was started by another run at the same moment; this run stops`,
  );
}

/**
 * Marks a started step completed with its result (JSON text, or null when not kept). Resolves to false when the step
 * was no longer `started` (another run took it over after this one lost its lease).
 *
 * Its commit is not waited for on disk (`synchronous_commit` off for this statement alone): the intent, written before
 * the call, was; this record only spares the next attempt a call. Lost, which only a crash of the database server
 * itself within a fraction of a second can do (a dead worker cannot), it leaves the step `started`, which the next
 * attempt treats as unknown, the designed fallback: called again with its key if idempotent, held for review if not.
 * Waiting for the flush was the larger part of a step's cost (docs/effects.md#what-a-step-costs).
 */
export async function completeStep(store: PayhooksDatabase, ref: StepRef, result: string | null): Promise<boolean> {
  const done = await sql`
    update ${sql.id(store.schema, 'effect_steps')} s
       set state = 'completed', result = ${result}, error = null, ended_at = now()
      from (select set_config('synchronous_commit', 'off', true)) as relaxed(setting)
     where ${ofStep(store, ref)} and s.state = 'started'`.execute(store.db);
  return Number(done.numAffectedRows ?? 0n) > 0;
}

/**
 * Marks a started step failed (its function threw: it runs again on the next attempt), with the error, capped by the
 * caller. Not waited for on disk either: lost, the step is found `started`, as if its process had died mid-call.
 */
export async function failStep(store: PayhooksDatabase, ref: StepRef, error: string): Promise<void> {
  await sql`
    update ${sql.id(store.schema, 'effect_steps')} s
       set state = 'failed', error = ${error}, ended_at = now()
      from (select set_config('synchronous_commit', 'off', true)) as relaxed(setting)
     where ${ofStep(store, ref)} and s.state = 'started'`.execute(store.db);
}

/** One step's row, reached in its event's partition: the receipt time comes from the ledger, one probe of its key. */
function ofStep(store: PayhooksDatabase, ref: StepRef) {
  return sql`s.event_id = ${ref.eventId} and s.account = ${ref.account} and s.handler = ${ref.handler} and s.step = ${ref.step}
    and s.received_at = (select first_received_at from ${sql.id(store.schema, 'event_ledger')}
                          where event_id = ${ref.eventId} and account = ${ref.account})`;
}

/**
 * Declares a started step idempotent after all: its function sent the step's key to an API that honours it (the
 * payhooks API client, a connector's `ctx.http`). Written before that request goes out, so that a death after it
 * leaves a step that is called again rather than held.
 */
export async function markStepIdempotent(store: PayhooksDatabase, ref: StepRef): Promise<void> {
  await store.db
    .updateTable('effect_steps')
    .set({ idempotent: true })
    .where('event_id', '=', ref.eventId)
    .where('account', '=', ref.account)
    .where('handler', '=', ref.handler)
    .where('step', '=', ref.step)
    .where('state', '=', 'started')
    .execute();
}

/** One step as operators see it. */
export interface EffectStep {
  account: string;
  eventId: string;
  receivedAt: Date;
  handler: string;
  step: string;
  idempotencyKey: string;
  idempotent: boolean;
  state: EffectStepState;
  attempt: number;
  calls: number;
  /** The recorded result's JSON text (null when none was kept). */
  result: string | null;
  error: string | null;
  startedAt: Date;
  endedAt: Date | null;
  resolution: 'done' | 'redo' | null;
  resolvedAt: Date | null;
}

/**
 * The steps of one event (or of several), in the order they started.
 *
 * @example
 * const steps = await listSteps(store, [{ account: 'default', eventId: 'evt_1' }]);
 */
export async function listSteps(store: PayhooksDatabase, events: readonly EventRef[]): Promise<EffectStep[]> {
  if (events.length === 0) return [];
  const rows = await store.db
    .selectFrom('effect_steps')
    .selectAll()
    .where(ofEvents(events))
    .orderBy('event_id')
    .orderBy('account')
    .orderBy('started_at')
    .orderBy('handler')
    .orderBy('step')
    .execute();
  return rows.map((row) => ({
    account: row.account,
    eventId: row.event_id,
    receivedAt: row.received_at,
    handler: row.handler,
    step: row.step,
    idempotencyKey: row.idempotency_key,
    idempotent: row.idempotent,
    state: row.state,
    attempt: row.attempt,
    calls: row.calls,
    result: row.result,
    error: row.error,
    startedAt: row.started_at,
    endedAt: row.ended_at,
    resolution: row.resolution,
    resolvedAt: row.resolved_at,
  }));
}

/** Steps waiting for an operator, and the events they hold. */
export interface NeedsReviewCount {
  steps: number;
  events: number;
}

/**
 * How many steps wait for an operator (`needs-review`), and how many events they hold; one query on a partial
 * index, for the metrics gauge and alarms.
 *
 * @example
 * const { steps } = await countNeedsReview(store); // 0 when nothing waits
 */
export async function countNeedsReview(store: PayhooksDatabase): Promise<NeedsReviewCount> {
  const row = await store.db
    .selectFrom('effect_steps')
    .select([sql<number>`count(*)::int`.as('steps'), sql<number>`count(distinct (event_id, account))::int`.as('events')])
    .where('state', '=', 'needs-review')
    .executeTakeFirstOrThrow();
  return { steps: row.steps, events: row.events };
}

/** An operator's answer to a step of unknown outcome: it happened (`done`), or call it again (`redo`). */
export type StepResolution = 'done' | 'redo';

/** What {@link resolveStep} did. */
export type ResolveOutcome =
  | {
      resolved: true;
      account: string;
      handler: string;
      step: string;
      /** Steps of the event still waiting for review. */
      remaining: number;
      /** Whether the event went back to the queue (its last step held for review was resolved). */
      requeued: boolean;
    }
  | { resolved: false; reason: 'not-found' | 'not-held' | 'ambiguous'; handlers?: string[]; accounts?: string[]; state?: EffectStepState };

/**
 * Resolves a step held for review: `done` records it completed (no result), `redo` lets the next attempt call it
 * again (with the same key). `handler` is needed only when several handlers of the event have a step of that name.
 * Once no step of the event waits for review any more, an event in `needs-review` goes back to the queue (its completed
 * handlers and steps are kept); the outcome says how many steps still wait and whether it went.
 *
 * @example
 * await resolveStep(store, { eventId: 'evt_1', step: 'sms' }, 'done');
 */
export async function resolveStep(
  store: PayhooksDatabase,
  ref: { eventId: string; step: string; handler?: string | undefined; account?: string | undefined },
  resolution: StepResolution,
): Promise<ResolveOutcome> {
  const outcome = await store.db.transaction().execute(async (trx) => {
    let candidates = trx
      .selectFrom('effect_steps')
      .select(['handler', 'state', 'account'])
      .where('event_id', '=', ref.eventId)
      .where('step', '=', ref.step);
    if (ref.handler !== undefined) candidates = candidates.where('handler', '=', ref.handler);
    if (ref.account !== undefined) candidates = candidates.where('account', '=', ref.account);
    const found = await candidates.forUpdate().execute();
    if (found.length === 0) return { resolved: false as const, reason: 'not-found' as const };
    if (found.length > 1)
      return {
        resolved: false as const,
        reason: 'ambiguous' as const,
        handlers: [...new Set(found.map((f) => f.handler))].sort(),
        accounts: [...new Set(found.map((f) => f.account))].sort(),
      };
    const [only] = found as [(typeof found)[number]];
    if (only.state !== 'needs-review') return { resolved: false as const, reason: 'not-held' as const, state: only.state };
    await trx
      .updateTable('effect_steps')
      .set({
        state: resolution === 'done' ? 'completed' : 'redo',
        resolution,
        resolved_at: sql`now()`,
        ended_at: sql`now()`,
      })
      .where('event_id', '=', ref.eventId)
      .where('account', '=', only.account)
      .where('handler', '=', only.handler)
      .where('step', '=', ref.step)
      .execute();
    const left = await trx
      .selectFrom('effect_steps')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('event_id', '=', ref.eventId)
      .where('account', '=', only.account)
      .where('state', '=', 'needs-review')
      .executeTakeFirstOrThrow();
    return { resolved: true as const, account: only.account, handler: only.handler, step: ref.step, remaining: left.n };
  });
  if (!outcome.resolved) return outcome;
  // The last step held: the event goes back to the queue, its completed handlers and steps kept.
  const requeued =
    outcome.remaining === 0 &&
    (await replayEvents(store, { eventIds: [ref.eventId], account: outcome.account, status: 'needs-review' })).length > 0;
  return { ...outcome, requeued };
}

/**
 * Sends every step of the events back to be called again on their next run (`payhooks replay --redo-effects`): the
 * rows are deleted, so each step starts afresh, with the same key (derived, not stored). Resolves to how many went.
 */
export async function forgetSteps(store: PayhooksDatabase, events: readonly EventRef[]): Promise<number> {
  if (events.length === 0) return 0;
  const result = await store.db.deleteFrom('effect_steps').where(ofEvents(events)).executeTakeFirst();
  return Number(result.numDeletedRows);
}
