import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';

/** How many stored events wait for a person: each is an event whose effect has not happened. */
export interface AttentionCounts {
  /** Handlers failed on every attempt. */
  dead: number;
  /** Data did not match the event type's schema. */
  invalid: number;
  /** No handler was registered for the type. */
  ignored: number;
}

/**
 * Counts dead, invalid and ignored events in one query (an index range on status), for the start-up summary.
 *
 * @example
 * const { dead } = await countEventsNeedingAttention(store);
 */
export async function countEventsNeedingAttention(store: PayhooksDatabase): Promise<AttentionCounts> {
  const rows = await store.db
    .selectFrom('inbox_events')
    .select(['status', sql<number>`count(*)::int`.as('n')])
    .where('status', 'in', ['dead', 'invalid', 'ignored'])
    .groupBy('status')
    .execute();
  const counts: AttentionCounts = { dead: 0, invalid: 0, ignored: 0 };
  for (const row of rows) if (row.status === 'dead' || row.status === 'invalid' || row.status === 'ignored') counts[row.status] = row.n;
  return counts;
}
