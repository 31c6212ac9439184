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

/**
 * Claims up to `limit` due events for `workerId` with a lease of `leaseMs`.
 *
 * Due: pending and past its next attempt time, or processing with an expired lease (its worker died).
 * Ordering: only the earliest unfinished event of each resource key can be claimed, so events of one
 * resource never run at once and run in the order received. A key whose head waits for a retry waits
 * with it: later events of that resource do not overtake. `SKIP LOCKED` lets workers claim side by side.
 *
 * @example
 * const events = await claimEvents(store, { workerId: 'host:123', limit: 10, leaseMs: 60_000 });
 */
export async function claimEvents(
  store: PayhooksDatabase,
  options: { workerId: string; limit: number; leaseMs: number },
): Promise<ClaimedEvent[]> {
  if (options.limit <= 0) return [];
  const table = sql.id(store.schema, 'inbox_events');
  const { rows } = await sql<{
    event_id: string;
    event_type: string;
    resource_key: string | null;
    raw_body: string;
    attempts: number;
    received_at: Date;
    seq: string | number | bigint;
  }>`
    with due as (
      select e.event_id
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
       set status = 'processing',
           attempts = target.attempts + 1,
           lease_owner = ${options.workerId},
           lease_expires_at = now() + make_interval(secs => ${options.leaseMs / 1000})
      from due
     where target.event_id = due.event_id
    returning target.event_id, target.event_type, target.resource_key, target.raw_body, target.attempts, target.received_at, target.seq
  `.execute(store.db);
  // RETURNING follows no particular order; hand events out in the order received.
  return rows
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
