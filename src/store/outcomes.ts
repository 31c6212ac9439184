import { sql, type Transaction } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import type { PayhooksTables } from './schema.js';

/** The lease an outcome is recorded under: a worker that lost its lease records nothing. */
export interface Lease {
  eventId: string;
  workerId: string;
}

/** Handlers that already completed for an event (skipped on a retry). */
export async function completedHandlers(store: PayhooksDatabase, eventId: string): Promise<Set<string>> {
  const rows = await store.db.selectFrom('handler_runs').select('handler').where('event_id', '=', eventId).execute();
  return new Set(rows.map((row) => row.handler));
}

/**
 * Records that one handler completed. Pass the handler's own transaction to commit its writes and
 * this mark together; a repeat mark is a no-op.
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

/** Finishes an event held under `lease` in a final state; false if the lease was lost meanwhile. */
export async function finishEvent(
  store: PayhooksDatabase,
  lease: Lease,
  status: 'done' | 'ignored' | 'invalid' | 'dead',
  lastError: string | null = null,
): Promise<boolean> {
  const result = await store.db
    .updateTable('inbox_events')
    .set({ status, last_error: lastError, processed_at: sql`now()`, lease_owner: null, lease_expires_at: null })
    .where('event_id', '=', lease.eventId)
    .where('lease_owner', '=', lease.workerId)
    .where('status', '=', 'processing')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/** Puts an event held under `lease` back to pending, due after `delayMs`; false if the lease was lost. */
export async function retryEventLater(store: PayhooksDatabase, lease: Lease, delayMs: number, lastError: string): Promise<boolean> {
  const result = await store.db
    .updateTable('inbox_events')
    .set({
      status: 'pending',
      last_error: lastError,
      next_attempt_at: sql`now() + make_interval(secs => ${delayMs / 1000})`,
      lease_owner: null,
      lease_expires_at: null,
    })
    .where('event_id', '=', lease.eventId)
    .where('lease_owner', '=', lease.workerId)
    .where('status', '=', 'processing')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
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
  let released = 0;
  for (const started of [true, false]) {
    const ids = events.filter((e) => e.started === started).map((e) => e.eventId);
    if (ids.length === 0) continue;
    const result = await store.db
      .updateTable('inbox_events')
      .set({
        status: 'pending',
        next_attempt_at: sql`now()`,
        lease_owner: null,
        lease_expires_at: null,
        ...(started ? {} : { attempts: sql`greatest(attempts - 1, 0)` }),
      })
      .where('event_id', 'in', ids)
      .where('lease_owner', '=', workerId)
      .where('status', '=', 'processing')
      .executeTakeFirst();
    released += Number(result.numUpdatedRows);
  }
  return released;
}

/** Pushes the lease of an event forward (before each handler), so a long run is not taken over mid-way. */
export async function extendLease(store: PayhooksDatabase, lease: Lease, leaseMs: number): Promise<boolean> {
  const result = await store.db
    .updateTable('inbox_events')
    .set({ lease_expires_at: sql`now() + make_interval(secs => ${leaseMs / 1000})` })
    .where('event_id', '=', lease.eventId)
    .where('lease_owner', '=', lease.workerId)
    .where('status', '=', 'processing')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
