import type { Kysely } from 'kysely';
import { type EventType, EVENT_TYPES } from '../../events/event-types.js';
import { parseBodyJson } from '../../events/envelope.js';
import { parseJsonEvent } from '../../events/parse-event.js';
import { PayhooksError } from '../../errors.js';
import { compareText } from '../../internal/compare-text.js';
import { mirrorTargets } from '../mirror/event-targets.js';
import type { MirrorState } from '../mirror/states.js';
import { stateHash } from '../mirror/write.js';
import { type EventOnlyTable, finishedEventsPage, presentRows } from './verify-queries.js';

// Which records the stored events named, read from what the inbox keeps of every event: its body, exactly as
// received. The events' `payload` column is not written any more (the worker does not parse bodies it does not
// need), so a verify that named records through it named none, and proved nothing while saying "all match". The
// targets are the mirror sink's own (mirrorTargets), so verify expects a row wherever the sink would have written
// one.

/** The tables verify names through the events: payments (then read from the API by id) and those the API cannot read. */
export type NamedTable = 'payments' | EventOnlyTable;

/**
 * The tables each event type's mirror targets can fall in, among those named here (customers and invoices are
 * listed by the API instead). Spelled out per type so that a type added to the catalog without an entry does not
 * compile; test/sync/verify-stored-names.test.ts checks it against mirrorTargets.
 */
export const NAMED_TABLES_OF = {
  INVOICE_CREATED: ['payments'],
  INVOICE_UPDATED: ['payments'],
  INVOICE_CANCELED: ['payments'],
  INVOICE_PAID: ['payments'],
  INVOICE_PAID_OTHER: ['payments'],
  CUSTOMER_CREATED: [],
  CUSTOMER_UPDATED: [],
  CUSTOMER_ARCHIVED: [],
  PAYMENT_ATTEMPT_SUCCEEDED: ['payments'],
  PAYMENT_ATTEMPT_FAILED: ['payments'],
  PAYMENT_COMPLETED: ['payments'],
  PAYMENT_METHOD_CREATED: ['payment_methods'],
  PAYMENT_REFUNDED: ['refunds', 'payments'],
  DISPUTE_CREATED: ['disputes'],
  DISPUTE_RESPONSE_CREATED: ['disputes'],
  DISPUTE_RESOLVED: ['disputes'],
  SUBSCRIPTION_CREATED: ['subscriptions'],
  SUBSCRIPTION_UPDATED: ['subscriptions'],
  SUBSCRIPTION_CANCELED: ['subscriptions'],
} as const satisfies Record<EventType, readonly NamedTable[]>;

/** The last event (by order of receipt) that named a record. */
export interface NamingEvent {
  eventId: string;
  eventType: string;
  seq: bigint;
}

/** A record of a table the API cannot read that has no mirror row, with what the events say it is. */
export interface UnmirroredRecord {
  id: string;
  namedBy: NamingEvent;
  /** The newest state the events carry, by the mirror's own order (what its guarded write would have kept). */
  state: MirrorState;
  /** The event that carried `state`. */
  stateFrom: NamingEvent;
}

/** What {@link namedByStoredEvents} found for one table. */
export interface NamedIn {
  /** Each record named, with the last event that named it. */
  named: Map<string, NamingEvent>;
  /** Finished events of the table's types that were read. */
  events: number;
  /** For a table the API cannot read: the named records without a row. */
  unmirrored: Map<string, UnmirroredRecord>;
}

/** Finished events whose stored body could not be read: what they named is unknown, so nothing can be proved. */
export class UnreadableEventsError extends PayhooksError {
  constructor(
    readonly count: number,
    readonly example: string,
  ) {
    super(
      `${count} finished event(s) (${example} among them) have a stored body that is not a valid event: verify cannot tell which ` +
        'records they named, so it cannot say the mirror holds them. Look at them with payhooks events show.',
    );
  }
}

/** Events per page: a page of bodies is about 2 KB each. */
const PAGE = 500;

/** (state_at, rank, hash), the order of the mirror's guarded write: whether `a` would replace `b`. */
function isNewerOrSame(a: MirrorState, b: MirrorState): boolean {
  const at = (state: MirrorState) => state.stateAt?.getTime() ?? Number.NEGATIVE_INFINITY;
  if (at(a) !== at(b)) return at(a) > at(b);
  if (a.rank !== b.rank) return a.rank > b.rank;
  return compareText(stateHash(a.data), stateHash(b.data)) >= 0;
}

/**
 * Reads the finished events that can name a record of `tables` (each type through its index range, a page at a
 * time) and returns, per table, every record they named; for the tables the API cannot read, also the records the
 * mirror (`mirrorSchema`) has no row for, with the newest state the events carry. `newest`: only the newest that
 * many events of each type (a sampled verify). Aborted by `signal`, it returns what it read so far. Throws {@link UnreadableEventsError} when a body cannot be read: a
 * record it named would otherwise go unseen, and the proof would be vacuous.
 *
 * @example
 * const named = await namedByStoredEvents(db, 'payhooks', 'payhooks_mirror', ['payments', 'refunds'], { account: 'default', since: null });
 * named.get('refunds')?.unmirrored // the refunds that have no row
 */
export async function namedByStoredEvents<DB>(
  db: Kysely<DB>,
  inboxSchema: string,
  mirrorSchema: string,
  tables: readonly NamedTable[],
  options: {
    /** The account whose events are read and whose mirror rows are looked for. */
    account: string;
    since: Date | null;
    newest?: number | undefined;
    signal?: AbortSignal | undefined;
  },
): Promise<Map<NamedTable, NamedIn>> {
  const found = new Map<NamedTable, NamedIn>(tables.map((table) => [table, { named: new Map(), events: 0, unmirrored: new Map() }]));
  const present = new Map<NamedTable, Set<string>>(tables.map((table) => [table, new Set()]));
  let unreadable = 0;
  let example = '';
  for (const eventType of EVENT_TYPES) {
    const wanted = (NAMED_TABLES_OF[eventType] as readonly NamedTable[]).filter((table) => found.has(table));
    if (wanted.length === 0) continue;
    const newest = options.newest !== undefined;
    let after: bigint | null = null;
    let left = options.newest ?? Number.POSITIVE_INFINITY;
    // Stopped: what was read so far is returned, and the caller reports its resource unfinished.
    while (left > 0 && !options.signal?.aborted) {
      const rows = await finishedEventsPage(db, inboxSchema, {
        account: options.account,
        eventType,
        after,
        newest,
        limit: Math.min(PAGE, left),
        since: options.since,
      });
      if (rows.length === 0) break;
      left -= rows.length;
      after = BigInt(rows.at(-1)!.seq);
      // Snapshots of this page by table and id, for the records the API cannot read.
      const snapshots = new Map<NamedTable, { id: string; state: MirrorState; cause: NamingEvent }[]>();
      for (const row of rows) {
        for (const table of wanted) found.get(table)!.events++;
        const cause: NamingEvent = { eventId: row.event_id, eventType: row.event_type, seq: BigInt(row.seq) };
        let targets: ReturnType<typeof mirrorTargets>;
        try {
          const parsed = parseJsonEvent(parseBodyJson(row.raw_body));
          if (!parsed.ok || 'unknown' in parsed.event) throw new Error('not an event of its type');
          targets = mirrorTargets(parsed.event);
        } catch {
          unreadable++;
          example ||= row.event_id;
          continue;
        }
        for (const target of targets) {
          const table = (target.kind === 'read' ? target.table : target.state.table) as NamedTable;
          const into = found.get(table);
          if (!into) continue;
          const id = target.kind === 'read' ? target.id : target.state.id;
          const last = into.named.get(id);
          if (!last || last.seq < cause.seq) into.named.set(id, cause);
          if (target.kind === 'snapshot') {
            const list = snapshots.get(table) ?? [];
            list.push({ id, state: target.state, cause });
            snapshots.set(table, list);
          }
        }
      }
      for (const [table, list] of snapshots) {
        const known = present.get(table)!;
        const unmirrored = found.get(table)!.unmirrored;
        const ask = [...new Set(list.map((item) => item.id))].filter((id) => !known.has(id) && !unmirrored.has(id));
        for (const id of await presentRows(db, mirrorSchema, options.account, table, ask)) known.add(id);
        for (const { id, state, cause } of list) {
          if (known.has(id)) continue;
          const held = unmirrored.get(id);
          if (!held) unmirrored.set(id, { id, namedBy: cause, state, stateFrom: cause });
          else if (isNewerOrSame(state, held.state)) Object.assign(held, { state, stateFrom: cause });
        }
      }
      if (rows.length < PAGE) break;
    }
  }
  if (unreadable > 0) throw new UnreadableEventsError(unreadable, example);
  for (const into of found.values()) {
    for (const record of into.unmirrored.values()) record.namedBy = into.named.get(record.id) ?? record.namedBy;
  }
  return found;
}
