import { type RawBuilder, sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { onlyAccount } from './accounts.js';
import { PREPARED } from './prepared-statements.js';
import type { HandlerOutcome } from './schema.js';

/** A handler that gave up on an event (a dead letter): it does not run again for it until a replay. */
export interface GivenUpHandler {
  handler: string;
  /** Why, as recorded when it gave up. */
  error: string;
}

/** An event a worker holds a lease on. */
export interface ClaimedEvent {
  /** The account (organization) it belongs to: with the eventId, its key. */
  account: string;
  eventId: string;
  eventType: string;
  resourceKey: string | null;
  rawBody: string;
  /** This run's attempt number, from 1. */
  attempt: number;
  receivedAt: Date;
  /** The `traceparent` it was received under (migrations/012), which each attempt's span links to; null: none. */
  traceParent: string | null;
  /**
   * The receiver found its data certainly valid under the schemas the claim was asked about ({@link ClaimOptions}'s
   * `dataCheck`): its handlers may run without the body being parsed first.
   */
  dataChecked: boolean;
  /** Handlers already completed for this event (an earlier attempt, or before a replay): they do not run again. */
  completedHandlers: string[];
  /** Handlers that gave up on this event on an earlier attempt: they do not run again either; the event ends `dead`. */
  givenUp: GivenUpHandler[];
  /**
   * Handlers an earlier event of the same resource still owes (it waits for a retry of them): they must not run for
   * this event yet, or they would see the resource's events out of order. The others may.
   */
  blockedHandlers: string[];
  /**
   * The token this claim's lease was issued under (migrations/019): the worker's outcome, heartbeat and effect-step
   * writes for the event are accepted only while the queue row still holds it (fencing).
   */
  leaseToken: string;
}

/** Options of {@link claimEvents}. */
export interface ClaimOptions {
  workerId: string;
  limit: number;
  leaseMs: number;
  /**
   * Attempts are counted when an event is claimed, not when its outcome is recorded, so a handler that kills
   * its process (process.exit, out of memory) still uses them up: an event whose lease expired after its
   * `maxAttempts`-th claim is not claimed again but buried as `dead`. Default: no limit.
   */
  maxAttempts?: number | undefined;
  /** The fingerprint of the worker's schemas (`dataCheckFingerprint`): events stored under it come `dataChecked`. */
  dataCheck?: string | undefined;
  /** Told about each event buried that way (for a log line). */
  onBuried?: ((event: { account: string; eventId: string; eventType: string; attempts: number }) => void) | undefined;
}

/**
 * Claims up to `limit` due events for `workerId` with a lease of `leaseMs`, in one statement over the queue
 * (which holds only unfinished events, so its cost does not grow with history).
 *
 * Due: waiting and past its due time, or leased with the lease run out (its worker died). An expired one that has
 * had `maxAttempts` claims already leaves the queue as `dead` instead, with the reason.
 *
 * Fair between accounts (migrations/018): the accounts with due events share each claim in proportion to their worker
 * share, take turns when there are more of them than the claim has room for (every account's turn comes within
 * ceil(accounts / limit) claims), and room left unused is filled from every account's due events in queue order.
 * docs/accounts.md#fairness states the bound.
 *
 * Ordering is per (account, resource, handler). An event is claimed only while no event of its resource key holds a live
 * lease (so events of one resource never run at once; this also covers deliveries of one resource that commit out of
 * `seq` order: a later one may already run when an earlier one becomes visible, and the earlier one then waits for
 * it), and only if every earlier queued event of its key is waiting for a retry, not due, with a known set of owed
 * handlers (`owed`). Such an event comes with the union of those sets as `blockedHandlers`: the worker runs its other
 * handlers now and leaves those for when the earlier events have settled them (completed, or given up). An earlier
 * event that is due, or whose owed handlers are unknown (not run yet, or failed outside any handler), holds the whole
 * key back, as before. `SKIP LOCKED` lets workers claim side by side. Each claimed event comes with the handlers that
 * already settled it, so a run needs no further query before its handlers start.
 *
 * The due, never-run events of a leased event's key queued behind it are set aside (parked) until its lease runs out,
 * so that later claims do not walk them while it runs (a heartbeat that extends the lease extends their wait:
 * extendLeases); its outcome wakes the next one (recordOutcomes).
 *
 * @example
 * const events = await claimEvents(store, { workerId: 'host:123', limit: 10, leaseMs: 60_000 });
 */
export async function claimEvents(store: PayhooksDatabase, options: ClaimOptions): Promise<ClaimedEvent[]> {
  if (options.limit <= 0) return [];
  const { rows } = await claimStatement(store, options, await onlyAccount(store)).execute(store.db);
  const claimed: ClaimedEvent[] = [];
  for (const row of rows) {
    if (row.buried) options.onBuried?.({ account: row.account, eventId: row.event_id, eventType: row.event_type, attempts: row.attempts });
    else
      claimed.push({
        account: row.account,
        eventId: row.event_id,
        eventType: row.event_type,
        resourceKey: row.resource_key,
        rawBody: row.raw_body ?? '',
        attempt: row.attempts,
        receivedAt: row.received_at ?? new Date(0),
        traceParent: row.trace_parent,
        dataChecked: row.data_checked === true,
        // Most events have no settled handler: no arrays to filter for them.
        completedHandlers: row.runs ? row.runs.filter(([, outcome]) => outcome === 'done').map(([handler]) => handler) : [],
        givenUp: row.runs
          ? row.runs.filter(([, outcome]) => outcome === 'dead').map(([handler, , error]) => ({ handler, error: error ?? 'gave up' }))
          : [],
        blockedHandlers: row.blocked ?? [],
        leaseToken: String(row.lease_token),
      });
  }
  return claimed;
}

/** A row of {@link claimStatement}: a leased event, or one buried as dead. */
interface ClaimRow {
  event_id: string;
  account: string;
  event_type: string;
  resource_key: string | null;
  raw_body: string | null;
  attempts: number;
  received_at: Date | null;
  trace_parent: string | null;
  data_checked: boolean | null;
  seq: string | number | bigint;
  buried: boolean;
  runs: [handler: string, outcome: HandlerOutcome, error: string | null][] | null;
  blocked: string[] | null;
  lease_token: string | number | null;
}

/**
 * The statement {@link claimEvents} runs (options checked), apart so that a test can EXPLAIN it: with `onlyAccount`,
 * the claim of that one account (the store must have no other).
 *
 * @example
 * const { rows } = await claimStatement(store, { workerId: 'w', limit: 10, leaseMs: 60_000 }).execute(store.db);
 */
export function claimStatement(store: PayhooksDatabase, options: ClaimOptions, onlyAccount: string | null = null): RawBuilder<ClaimRow> {
  const maxAttempts = options.maxAttempts ?? 2_147_483_647;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1)
    throw new RangeError(`maxAttempts must be a whole number of at least 1, not ${maxAttempts}.`);
  // The statement is a function of the schema (migrations/015 says why): its plan may not depend on the queue's
  // statistics.
  const args = sql`${options.workerId}::text, ${options.limit}::int, ${options.leaseMs / 1000}::float8, ${maxAttempts}::int,
      ${options.dataCheck ?? null}::text`;
  if (onlyAccount !== null) {
    return sql<ClaimRow>`${PREPARED}
    select * from ${sql.id(store.schema, 'claim_events_single')}(${onlyAccount}::text, ${args})
  `;
  }
  return sql<ClaimRow>`${PREPARED}
    select * from ${sql.id(store.schema, 'claim_events')}(${args})
  `;
}
