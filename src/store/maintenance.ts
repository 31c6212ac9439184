import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import type { EventStatus } from './schema.js';

/**
 * Puts events back in the queue, due now, with a fresh attempt count. Handlers that completed stay
 * completed (only the rest run), except for events already `done`, whose completion marks are cleared so
 * that a replay runs them again. Events being processed are left alone. Resolves to the ids re-queued.
 *
 * @example
 * await replayEvents(store, { eventIds: ['evt_123'] });
 * await replayEvents(store, { status: 'dead' });
 */
export async function replayEvents(
  store: PayhooksDatabase,
  which: { eventIds: readonly string[] } | { status: Exclude<EventStatus, 'processing' | 'pending'> },
): Promise<string[]> {
  if ('eventIds' in which && which.eventIds.length === 0) return [];
  const selected =
    'eventIds' in which ? sql<boolean>`event_id in (${sql.join([...which.eventIds])})` : sql<boolean>`status = ${which.status}`;
  return store.db.transaction().execute(async (trx) => {
    await trx
      .deleteFrom('handler_runs')
      .where('event_id', 'in', trx.selectFrom('inbox_events').select('event_id').where('status', '=', 'done').where(selected))
      .execute();
    const rows = await trx
      .updateTable('inbox_events')
      .set({ status: 'pending', attempts: 0, next_attempt_at: sql`now()`, processed_at: null, lease_owner: null, lease_expires_at: null })
      .where('status', '!=', 'processing')
      .where(selected)
      .returning('event_id')
      .execute();
    return rows.map((row) => row.event_id);
  });
}

/** The sender retries for 2 s + 10 s + 5 min + 20 min + 1 h + 5 h + 1 d + 3 d (about 4 d 6.5 h) plus timeouts. */
export const SENDER_RETRY_HORIZON_MS = (4 * 24 + 7) * 3600 * 1000;

/** Throws unless `olderThanMs` reaches past the sender's retry horizon. */
export function assertPruneAge(olderThanMs: number): void {
  if (!(olderThanMs >= SENDER_RETRY_HORIZON_MS)) {
    throw new Error(
      `Refusing to prune events younger than the sender's retry horizon (4 days 7 hours): a pruned eventId could be delivered again and run twice. Use an age of at least 4d7h (e.g. --older-than 30d).`,
    );
  }
}

/**
 * Deletes finished events (`done`, `ignored`) received more than `olderThanMs` ago. Refuses an age inside
 * the sender's retry horizon: a pruned eventId could otherwise come back and run twice. Dead, invalid and
 * unfinished events are never pruned. Resolves to the number deleted.
 */
export async function pruneEvents(store: PayhooksDatabase, olderThanMs: number): Promise<number> {
  assertPruneAge(olderThanMs);
  const result = await store.db
    .deleteFrom('inbox_events')
    .where('status', 'in', ['done', 'ignored'])
    .where('received_at', '<', sql<Date>`now() - make_interval(secs => ${olderThanMs / 1000})`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
