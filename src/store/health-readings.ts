import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { oldestPendingEvent } from './inbox.js';
import { countOpenIssues, listIssues } from './issues.js';
import { countQuarantined } from './quarantine.js';

/** The resource of the oldest pending event and its queued events, that event included. */
export interface PendingResource {
  key: string;
  queued: number;
}

/** What the database says about the inbox's health, for the alarms (src/alarms/). */
export interface HealthReadings {
  /** When the newest stored event was received (by any receiver on this database); null: none is stored. */
  newestReceivedAt: Date | null;
  /** Age of the oldest pending event not held by a worker, ms; 0 when none is pending. */
  oldestPendingAgeMs: number;
  /** That event's resource and how many of its events are queued (it included); null when none is pending or it has no key. */
  oldestPendingResource: PendingResource | null;
  /** Events that ended `dead` within the window asked for. */
  recentlyDead: number;
  /** Deliveries held in quarantine, waiting for an operator. */
  quarantined: number;
  /** Issues open (new or reopened, not acknowledged), and the most recently failing one described. */
  openIssues: { count: number; newest: string | null };
}

/**
 * Reads what the alarms need from the database in a few small queries: the newest event's arrival, the backlog's
 * age, the events that went dead within `deadWithinMs`, the held quarantine.
 *
 * @example
 * const readings = await readHealthReadings(store, { deadWithinMs: 3_600_000 });
 */
export async function readHealthReadings(store: PayhooksDatabase, options: { deadWithinMs: number }): Promise<HealthReadings> {
  const events = sql.id(store.schema, 'inbox_events');
  const [newest, oldest, dead, quarantined, openCount, [newestIssue]] = await Promise.all([
    // The newest by order of receipt: seq is indexed, received_at is not (max() would read the whole table).
    sql<{ at: Date | null }>`select received_at as at from ${events} order by seq desc limit 1`.execute(store.db),
    oldestPendingEvent(store),
    // The status index narrows this to dead events; processed_at is when each ended so.
    sql<{ n: number }>`
      select count(*)::int as n from ${events}
       where status = 'dead' and processed_at >= now() - make_interval(secs => ${options.deadWithinMs / 1000})`.execute(store.db),
    countQuarantined(store),
    countOpenIssues(store),
    listIssues(store, { state: 'open', limit: 1 }),
  ]);
  const at = newest.rows[0]?.at;
  return {
    newestReceivedAt: at ? new Date(at) : null,
    oldestPendingAgeMs: oldest?.ageMs ?? 0,
    oldestPendingResource: oldest?.resourceKey ? { key: oldest.resourceKey, queued: oldest.queuedForResource } : null,
    recentlyDead: dead.rows[0]?.n ?? 0,
    quarantined,
    openIssues: {
      count: openCount,
      newest: newestIssue
        ? `${newestIssue.handler}: ${newestIssue.errorClass} on ${newestIssue.eventType}, ${newestIssue.affectedEvents} event(s)`
        : null,
    },
  };
}
