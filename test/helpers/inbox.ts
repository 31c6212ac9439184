import type { PayhooksDatabase } from '../../src/store/database.js';
import { storeEvent } from '../../src/store/inbox.js';
import { resourceKeyOf } from '../../src/events/index.js';

/** Stores an envelope as the receiver would (already verified), for worker tests. */
export async function putEvent(store: PayhooksDatabase, envelope: { eventId: string; eventType: string; data: unknown }): Promise<void> {
  await storeEvent(store, {
    eventId: envelope.eventId,
    eventType: envelope.eventType,
    resourceKey: resourceKeyOf(envelope.eventType, envelope.data),
    rawBody: JSON.stringify(envelope),
    headers: {},
  });
}

/** The status of every event, by id. */
export async function statuses(store: PayhooksDatabase): Promise<Record<string, string>> {
  const rows = await store.db.selectFrom('inbox_events').select(['event_id', 'status']).execute();
  return Object.fromEntries(rows.map((r) => [r.event_id, r.status]));
}
