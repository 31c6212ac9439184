import { type RawBuilder, sql } from 'kysely';
import { eventKey } from './accounts.js';

/** An event by its whole key: an eventId is unique only within its account (migrations/018). */
export interface EventRef {
  account: string;
  eventId: string;
}

/**
 * A condition that picks the rows of `events` (by the `event_id` and `account` columns of `alias`, or unqualified):
 * found by their ids as an index condition on the key's first column, then held to each one's account (an eventId may
 * be another account's event too). The ids go in as `any(array(select unnest(…)))`, whose length the planner cannot
 * see: given the list itself, it weighed a probe of the primary key per id against one pass over the queue and, for
 * a batch of hundreds in a queue of tens of thousands, picked the pass (10 to 15 ms per outcome batch, issue 27). A
 * batch of one account's events (the usual batch) is held to that account by an equality on an expression no index
 * leads with: on the column itself, the planner (the queue's statistics taken while it was nearly empty) walked the
 * queue's (account, run_at, seq) index from end to end, testing each row against the whole list of ids: 73 ms of an
 * outcome batch of 1,000 in a queue of 20,000 (auto_explain in a draining worker). A mixed batch is held to its
 * (account, eventId) pairs, looked up in a jsonb object of them, a binary search per row. A semi-join with the pairs
 * unnested was planned as a nested loop that compared every row with every pair: 125,000 comparisons and 150 ms for
 * an outcome batch of 500 (EXPLAIN ANALYZE).
 *
 * @example
 * db.selectFrom('effect_steps').selectAll().where(ofEvents([{ account: 'default', eventId: 'evt_1' }]))
 */
export function ofEvents(events: readonly EventRef[], alias?: string): RawBuilder<boolean> {
  const column = (name: string) => (alias ? sql.ref(`${alias}.${name}`) : sql.ref(name));
  const ids = sql`any(array(select unnest(${events.map((e) => e.eventId)}::text[])))`;
  const accounts = new Set(events.map((e) => e.account));
  const ofAccount =
    accounts.size <= 1
      ? sql`(${column('account')} || '') = ${events[0]?.account ?? null}`
      : sql`(select jsonb_object(k, k) from (select ${events.map((e) => eventKey(e.account, e.eventId))}::text[] as k) keys) ? (${column('account')} || chr(10) || ${column('event_id')})`;
  return sql<boolean>`(${column('event_id')} = ${ids} and ${ofAccount})`;
}
