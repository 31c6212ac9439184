import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';

/** An event a worker holds a lease on. */
export interface ClaimedEvent {
  eventId: string;
  eventType: string;
  resourceKey: string | null;
  rawBody: string;
  /** This run's attempt number, from 1. */
  attempt: number;
  receivedAt: Date;
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
  /** Told about each event buried that way (for a log line). */
  onBuried?: ((event: { eventId: string; eventType: string; attempts: number }) => void) | undefined;
}

/**
 * Claims up to `limit` due events for `workerId` with a lease of `leaseMs`.
 *
 * Due: pending and past its next attempt time, or processing with an expired lease (its worker died). An
 * expired one that has had `maxAttempts` claims already is marked `dead` instead, with the reason.
 * Ordering: only the earliest unfinished event of each resource key can be claimed, so events of one
 * resource never run at once and run in the order received. A key whose head waits for a retry waits
 * with it: later events of that resource do not overtake. `SKIP LOCKED` lets workers claim side by side.
 *
 * @example
 * const events = await claimEvents(store, { workerId: 'host:123', limit: 10, leaseMs: 60_000 });
 */
export async function claimEvents(store: PayhooksDatabase, options: ClaimOptions): Promise<ClaimedEvent[]> {
  if (options.limit <= 0) return [];
  const maxAttempts = options.maxAttempts ?? 2_147_483_647;
  if (!Number.isSafeInteger(maxAttempts) || maxAttempts < 1)
    throw new RangeError(`maxAttempts must be a whole number of at least 1, not ${maxAttempts}.`);
  const table = sql.id(store.schema, 'inbox_events');
  const { rows } = await sql<{
    event_id: string;
    event_type: string;
    resource_key: string | null;
    raw_body: string;
    attempts: number;
    received_at: Date;
    seq: string | number | bigint;
    buried: boolean;
  }>`
    with due as (
      select e.event_id, (e.status = 'processing' and e.attempts >= ${maxAttempts}) as buried
        from ${table} e
       where ((e.status = 'pending' and e.next_attempt_at <= now())
           or (e.status = 'processing' and e.lease_expires_at <= now()))
         and (e.resource_key is null or not exists (
               select 1 from ${table} earlier
                where earlier.resource_key = e.resource_key
                  and earlier.seq < e.seq
                  and earlier.status in ('pending', 'processing')))
       order by e.seq
       limit ${options.limit}
       for update skip locked
    )
    update ${table} as target
       set status = case when due.buried then 'dead' else 'processing' end,
           attempts = case when due.buried then target.attempts else target.attempts + 1 end,
           last_error = case when due.buried
             then 'Its last allowed attempt never recorded an outcome: the process running it died (or lost its lease) after '
                  || target.attempts || ' claims of ${sql.raw(String(maxAttempts))} allowed. Replay it once the handler is fixed.'
             else target.last_error end,
           processed_at = case when due.buried then now() else target.processed_at end,
           lease_owner = case when due.buried then null else ${options.workerId} end,
           lease_expires_at = case when due.buried then null else now() + make_interval(secs => ${options.leaseMs / 1000}) end
      from due
     where target.event_id = due.event_id
    returning target.event_id, target.event_type, target.resource_key, target.raw_body, target.attempts, target.received_at, target.seq,
              due.buried
  `.execute(store.db);
  for (const row of rows) {
    if (row.buried) options.onBuried?.({ eventId: row.event_id, eventType: row.event_type, attempts: row.attempts });
  }
  // RETURNING follows no particular order; hand events out in the order received.
  return rows
    .filter((row) => !row.buried)
    .sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1))
    .map((row) => ({
      eventId: row.event_id,
      eventType: row.event_type,
      resourceKey: row.resource_key,
      rawBody: row.raw_body,
      attempt: row.attempts,
      receivedAt: row.received_at,
    }));
}
