import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { type StoredEvent, toStoredEvent, summaryColumns } from './inbox.js';
import type { EventStatus } from './schema.js';

/** Filters of {@link pageEvents}, as the operator console offers them. */
export interface EventPageFilter {
  /** Only this account's events; default every account's. */
  account?: string | undefined;
  status?: EventStatus | undefined;
  eventType?: string | undefined;
  /** The resource the event is about, e.g. `invoice:inv_123`. */
  resourceKey?: string | undefined;
  /** The start of an eventId, e.g. `evt_8f`. */
  eventIdPrefix?: string | undefined;
  receivedFrom?: Date | undefined;
  receivedBefore?: Date | undefined;
  /** The `nextCursor` of the page before. */
  cursor?: string | undefined;
  /** Default 50, at most {@link MAX_EVENT_PAGE}. */
  limit?: number | undefined;
}

/** The most events one page holds, whoever asks (the console, or the command line beside serve). */
export const MAX_EVENT_PAGE = 500;

/** One page of events, newest first; `nextCursor` is null on the last page. */
export interface EventPage {
  events: StoredEvent[];
  nextCursor: string | null;
}

/** `%`, `_` and `\` match literally in the prefix of a LIKE. */
const likePrefix = (prefix: string) => `${prefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/**
 * A page of stored events, newest first, filtered. The cursor is the arrival position of the last event shown,
 * so a page stays stable while new events arrive above it.
 *
 * @example
 * const first = await pageEvents(store, { status: 'dead', limit: 20 });
 * const second = await pageEvents(store, { status: 'dead', limit: 20, cursor: first.nextCursor ?? undefined });
 */
export async function pageEvents(store: PayhooksDatabase, filter: EventPageFilter = {}): Promise<EventPage> {
  const limit = Math.min(filter.limit ?? 50, MAX_EVENT_PAGE);
  let query = store.db
    .selectFrom('inbox_event_states')
    .select([...summaryColumns, 'seq'])
    .orderBy('seq', 'desc')
    .limit(limit + 1);
  if (filter.account) query = query.where('account', '=', filter.account);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.eventType) query = query.where('event_type', '=', filter.eventType);
  if (filter.resourceKey) query = query.where('resource_key', '=', filter.resourceKey);
  if (filter.eventIdPrefix) query = query.where('event_id', 'like', likePrefix(filter.eventIdPrefix));
  if (filter.receivedFrom) query = query.where('received_at', '>=', filter.receivedFrom);
  if (filter.receivedBefore) query = query.where('received_at', '<', filter.receivedBefore);
  if (filter.cursor) query = query.where('seq', '<', filter.cursor);
  const rows = await query.execute();
  const shown = rows.slice(0, limit);
  return { events: shown.map(toStoredEvent), nextCursor: rows.length > limit ? String(shown.at(-1)!.seq) : null };
}

/** Arrivals of one minute: events first received in it, deliveries of those, and how many of them have failed. */
export interface MinuteActivity {
  minute: Date;
  events: number;
  deliveries: number;
  failures: number;
}

/**
 * Events by the minute they first arrived, over the last `hours`: how many, with how many deliveries, and how many
 * of them have a handler failure on record (dead, invalid, or retrying). Minutes with nothing are left out.
 *
 * @example
 * await activityByMinute(store, 3) // [{ minute, events: 12, deliveries: 15, failures: 1 }, …]
 */
export async function activityByMinute(store: PayhooksDatabase, hours: number): Promise<MinuteActivity[]> {
  const { rows } = await sql<{ minute: Date; events: number; deliveries: number; failures: number }>`
    select date_trunc('minute', received_at) as minute, count(*)::int as events, sum(deliveries)::int as deliveries,
           (count(*) filter (where last_error is not null))::int as failures
      from ${sql.id(store.schema, 'inbox_event_states')}
     where received_at >= now() - make_interval(hours => ${hours})
     group by 1 order by 1`.execute(store.db);
  return rows.map((row) => ({ ...row, minute: new Date(row.minute) }));
}
