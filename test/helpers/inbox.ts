import { sql } from 'kysely';
import { ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import type { EventStatus } from '../../src/store/schema.js';
import { storeEvent, storeEvents } from '../../src/store/inbox.js';
import { exampleEvent, resourceKeyOf } from '../../src/events/index.js';
import { receivedEnvelope } from '../../src/events/parse-event.js';

type Envelope = { eventId: string; eventType: string; data: unknown };

function incoming(envelope: Envelope, account?: string) {
  const rawBody = JSON.stringify(envelope);
  return {
    ...(account === undefined ? {} : { account }),
    eventId: envelope.eventId,
    eventType: envelope.eventType,
    resourceKey: resourceKeyOf(envelope.eventType, envelope.data),
    rawBody,
    headers: {},
    // Marked as the receiver marks it (read-delivery.ts), so that workers take the path they take in production.
    dataValidUnder: receivedEnvelope(JSON.parse(rawBody))?.dataValidUnder ?? null,
  };
}

/** Stores an envelope as the receiver would (already verified), for worker tests. */
export async function putEvent(store: PayhooksDatabase, envelope: Envelope): Promise<void> {
  await storeEvent(store, incoming(envelope));
}

/**
 * Stores envelopes in one statement, as the receiver's group commit does with concurrent deliveries; in `account`
 * when given (it must be one the database knows), else the default account.
 */
export async function putEvents(store: PayhooksDatabase, envelopes: readonly Envelope[], account?: string): Promise<void> {
  await storeEvents(
    store,
    envelopes.map((envelope) => incoming(envelope, account)),
  );
}

/**
 * Stores INVOICE_PAID events of these ids without a resource key (in `account`, else the default account): no order
 * holds them back, so one claim may take them all.
 */
export async function putUnorderedEvents(store: PayhooksDatabase, ids: readonly string[], account?: string): Promise<void> {
  await storeEvents(
    store,
    ids.map((eventId) => ({
      ...(account === undefined ? {} : { account }),
      eventId,
      eventType: 'INVOICE_PAID',
      resourceKey: null,
      rawBody: JSON.stringify(exampleEvent('INVOICE_PAID', { eventId })),
      headers: {},
    })),
  );
}

/** The status of every event, by id. */
export async function statuses(store: PayhooksDatabase): Promise<Record<string, string>> {
  const rows = await store.db.selectFrom('inbox_event_states').select(['event_id', 'status']).execute();
  return Object.fromEntries(rows.map((r) => [r.event_id, r.status]));
}

/**
 * Puts a stored event in `status` as the worker would leave it: a final state takes it out of the queue, `processing`
 * gives it a lease held by nobody running (for an hour), `pending` leaves it waiting. `set` adds columns of the inbox
 * row (attempts, last_error, received_at…); attempts also go to the queue row.
 */
export async function setState(
  store: PayhooksDatabase,
  eventId: string,
  status: EventStatus,
  set: { attempts?: number; last_error?: string; received_at?: unknown } = {},
): Promise<void> {
  const stored = status === 'processing' ? 'pending' : status;
  const { received_at: receivedAt, ...columns } = set;
  if (receivedAt !== undefined) await backdate(store, [eventId], receivedAt);
  await store.db
    .updateTable('inbox_events')
    .set({ ...columns, status: stored } as never)
    .where('event_id', '=', eventId)
    .execute();
  if (status !== 'pending' && status !== 'processing') {
    await store.db.deleteFrom('inbox_queue').where('event_id', '=', eventId).execute();
    return;
  }
  const queued = {
    ...(status === 'processing' ? { lease_owner: 'elsewhere', run_at: sql`now() + interval '1 hour'` } : {}),
    ...(set.attempts === undefined ? {} : { attempts: set.attempts }),
  };
  if (Object.keys(queued).length === 0) return;
  await store.db
    .updateTable('inbox_queue')
    .set(queued as never)
    .where('event_id', '=', eventId)
    .execute();
}

/**
 * Moves events' receipt time to `receivedAt` (a Date or SQL expression) everywhere it is kept: the history row (which
 * moves to the partition of that time, made first if missing), the ledger, the queue, the handler runs and attempts,
 * so that the store finds them as if they had arrived then.
 */
export async function backdate(store: PayhooksDatabase, eventIds: readonly string[], receivedAt: unknown): Promise<void> {
  const at = (await sql<{ at: Date }>`select (${receivedAt})::timestamptz as at`.execute(store.db)).rows[0]!.at;
  await ensureHistoryPartitions(store, { from: at });
  const ids = sql`any(${[...eventIds]}::text[])`;
  const table = (name: string) => sql.id(store.schema, name);
  await sql`update ${table('inbox_events')} set received_at = ${at} where event_id = ${ids}`.execute(store.db);
  await sql`update ${table('event_ledger')} set first_received_at = ${at} where event_id = ${ids}`.execute(store.db);
  await sql`update ${table('inbox_queue')} set received_at = ${at} where event_id = ${ids}`.execute(store.db);
  await sql`update ${table('handler_runs')} set received_at = ${at} where event_id = ${ids}`.execute(store.db);
  await sql`update ${table('handler_attempts')} set received_at = ${at} where event_id = ${ids}`.execute(store.db);
  await sql`update ${table('effect_steps')} set received_at = ${at} where event_id = ${ids}`.execute(store.db);
}
