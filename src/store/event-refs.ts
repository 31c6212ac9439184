import { type RawBuilder, sql } from 'kysely';

/** An event by its whole key: an eventId is unique only within its account (migrations/018). */
export interface EventRef {
  account: string;
  eventId: string;
}

/**
 * A condition that picks the rows of `events` (by `event_id` and `account` columns), as two arrays unnested: one
 * probe of a key that leads with (event_id, account) per event.
 *
 * @example
 * db.selectFrom('effect_steps').selectAll().where(ofEvents([{ account: 'default', eventId: 'evt_1' }]))
 */
export function ofEvents(events: readonly EventRef[], alias?: string): RawBuilder<boolean> {
  const columns = alias ? sql`(${sql.ref(`${alias}.event_id`)}, ${sql.ref(`${alias}.account`)})` : sql`(event_id, account)`;
  return sql<boolean>`${columns} in (select * from unnest(${events.map((e) => e.eventId)}::text[], ${events.map((e) => e.account)}::text[]))`;
}
