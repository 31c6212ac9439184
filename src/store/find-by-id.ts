import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { SENDER_ID_HEADERS } from '../internal/sender-id.js';

/** What an id an operator pasted names: see {@link findById}. */
export type FoundId =
  /** `accounts`: every account that holds this eventId, first received first (`account` is the first of them). */
  | { kind: 'event'; account: string; eventId: string; accounts: string[] }
  /** `accounts`: every account with an event its sender gave this id, first received first (`account` is the first). */
  | { kind: 'sender-id'; account: string; eventId: string; header: string; accounts: string[] }
  | { kind: 'quarantine'; account: string; quarantineId: string; eventId: string | null; state: 'held' | 'released' | 'discarded' };

const QUARANTINE_NUMBER = /^#?(\d{1,18})$/;

/**
 * What `id` names, whichever id an operator has at hand: an eventId, the id a sender gave the delivery in its headers
 * ({@link SENDER_ID_HEADERS}; the first delivery's headers are the ones kept), or a quarantined delivery (its number,
 * `#12` or `12`, or the eventId it carries). An event is preferred to a quarantine row; undefined when nothing
 * matches. With `account`, only that account's; otherwise the first to arrive of any account, and an eventId or a
 * sender's id found lists every account that holds it, so that a caller can refuse to pick one (an eventId is unique
 * only within its account, and two organizations' senders may well give their deliveries the same id). Each lookup reads one index (the history's key, the ledger's sender-id index of migrations/025, the
 * quarantine's key).
 *
 * @example
 * await findById(store, 'whevt_3kd9') // { kind: 'sender-id', eventId: 'evt_81', header: 'x-webhook-event-id' }
 */
export async function findById(store: PayhooksDatabase, id: string, account?: string): Promise<FoundId | undefined> {
  // At most one row per account: the history's key is (event id, account, receipt time), and the ledger stores an
  // eventId once per account.
  let byEventId = store.db.selectFrom('inbox_events').select(['event_id', 'account']).where('event_id', '=', id).orderBy('seq');
  if (account !== undefined) byEventId = byEventId.where('account', '=', account);
  const events = await byEventId.execute();
  const event = events[0];
  if (event)
    return { kind: 'event', account: event.account, eventId: event.event_id, accounts: [...new Set(events.map((e) => e.account))] };
  // From the ledger's sender-id index (migrations/025), each with its history row (an event whose history is pruned
  // is not found). No ORDER BY here: with one, the planner may walk an index of arrival instead (78 ms against under
  // 1 ms at 100,000 events, when this index was the history's). A sender's id names one delivery of its account;
  // should several events carry it, the first to arrive is taken, in JavaScript, and every account is listed.
  let bySenderId = store.db
    .selectFrom('event_ledger as l')
    .innerJoin('inbox_events as e', (join) =>
      join.onRef('e.event_id', '=', 'l.event_id').onRef('e.account', '=', 'l.account').onRef('e.received_at', '=', 'l.first_received_at'),
    )
    .select(['e.event_id', 'e.account', 'e.headers', 'e.seq'])
    .where('l.sender_id', '=', id)
    .limit(100);
  if (account !== undefined) bySenderId = bySenderId.where('l.account', '=', account);
  const carriers = await bySenderId.execute();
  const inArrival = carriers.sort((a, b) => (BigInt(a.seq) < BigInt(b.seq) ? -1 : 1));
  const sent = inArrival[0];
  if (sent) {
    const header = SENDER_ID_HEADERS.find((name) => sent.headers[name] === id) ?? SENDER_ID_HEADERS[0];
    return {
      kind: 'sender-id',
      account: sent.account,
      eventId: sent.event_id,
      header,
      accounts: [...new Set(inArrival.map((row) => row.account))],
    };
  }
  const number = QUARANTINE_NUMBER.exec(id)?.[1];
  const { rows } = await sql<{ id: string; account: string; event_id: string | null; state: 'held' | 'released' | 'discarded' }>`
    select id::text as id, account, event_id, state from ${sql.id(store.schema, 'quarantine')}
     where (${number === undefined ? sql`false` : sql`id = ${number}::bigint`} or event_id = ${id})
       and ${account === undefined ? sql`true` : sql`account = ${account}`}
     order by id desc limit 1`.execute(store.db);
  const held = rows[0];
  return held ? { kind: 'quarantine', account: held.account, quarantineId: held.id, eventId: held.event_id, state: held.state } : undefined;
}
