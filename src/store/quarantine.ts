import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { DEFAULT_ACCOUNT } from './accounts.js';
import { ensureHistoryPartitions } from './history-partitions.js';
import { type IncomingEvent, isMissingPartition, type StoreOutcome, storeEvents } from './inbox.js';

/**
 * Why a signed delivery could not be stored as an event: the check of docs/receiver.md#quarantine that refused it.
 * `not_utf8`, `not_json`: the body; `not_envelope`: the JSON is not a storable envelope (a U+0000 in the eventId, an
 * id over 255 characters, …); `unstorable_resource`: the resource id it names; `unstorable_event`: a kept header, or
 * Postgres refused the row for its data.
 */
export const QUARANTINE_KINDS = ['not_utf8', 'not_json', 'not_envelope', 'unstorable_resource', 'unstorable_event'] as const;
export type QuarantineKind = (typeof QUARANTINE_KINDS)[number];

/** held until an operator acts; then released (stored as an event) or discarded. */
export type QuarantineState = 'held' | 'released' | 'discarded';

/** The default of `maxQuarantined`: held deliveries at most; past it the receiver answers 503 (see docs/receiver.md). */
export const DEFAULT_MAX_QUARANTINED = 10_000;

/** A delivery for the quarantine, as the receiver read it. */
export interface QuarantineInput {
  /** The account it was delivered for; default {@link DEFAULT_ACCOUNT}. */
  account?: string | undefined;
  kind: QuarantineKind;
  reason: string;
  /** The eventId and type, when the body had readable ones; kept only if they are storable text. */
  eventId?: string | undefined;
  eventType?: string | undefined;
  rawBody: Uint8Array;
  headers: Record<string, string>;
}

/** What became of a delivery given to {@link quarantineDelivery}: its row (new, or the one of the same bytes). */
export interface QuarantineReceipt {
  id: string;
  state: QuarantineState;
  deliveries: number;
  /** The event a released row became. */
  releasedEventId: string | null;
}

/** A quarantined delivery as operators see it in lists. */
export interface QuarantinedDelivery {
  id: string;
  /** The account it was delivered for: released, it becomes that account's event. */
  account: string;
  kind: QuarantineKind;
  reason: string;
  eventId: string | null;
  eventType: string | null;
  state: QuarantineState;
  deliveries: number;
  receivedAt: Date;
  lastReceivedAt: Date;
  releasedEventId: string | null;
  resolvedAt: Date | null;
}

/** A quarantined delivery with its exact bytes and headers, for `payhooks quarantine show` and release. */
export interface QuarantinedDetail extends QuarantinedDelivery {
  rawBody: Uint8Array;
  headers: Record<string, string>;
}

/** A quarantine number as lists show it: anything else names no row (and would not cast to bigint). */
const QUARANTINE_ID = /^\d{1,18}$/;

const summary = sql.raw(
  'id::text as id, account, kind, reason, event_id, event_type, state, deliveries, received_at, last_received_at, released_event_id, resolved_at',
);

type Row = {
  id: string;
  account: string;
  kind: QuarantineKind;
  reason: string;
  event_id: string | null;
  event_type: string | null;
  state: QuarantineState;
  deliveries: number;
  received_at: Date;
  last_received_at: Date;
  released_event_id: string | null;
  resolved_at: Date | null;
};

function toDelivery(row: Row): QuarantinedDelivery {
  return {
    id: row.id,
    account: row.account,
    kind: row.kind,
    reason: row.reason,
    eventId: row.event_id,
    eventType: row.event_type,
    state: row.state,
    deliveries: row.deliveries,
    receivedAt: new Date(row.received_at),
    lastReceivedAt: new Date(row.last_received_at),
    releasedEventId: row.released_event_id,
    resolvedAt: row.resolved_at && new Date(row.resolved_at),
  };
}

/**
 * Keeps a signed delivery that cannot be stored as an event, byte for byte with its headers and the reason, in one
 * statement. A repeat of the same bytes is counted on the row it already has, whatever its state, so it gets the
 * same answer. Resolves to undefined, keeping nothing, when `maxHeld` deliveries are held already.
 *
 * @example
 * const receipt = await quarantineDelivery(store, { kind: 'not_json', reason: 'The body is not valid JSON.', rawBody, headers }, 10_000);
 */
export async function quarantineDelivery(
  store: PayhooksDatabase,
  delivery: QuarantineInput,
  maxHeld: number = DEFAULT_MAX_QUARANTINED,
): Promise<QuarantineReceipt | undefined> {
  const table = sql.id(store.schema, 'quarantine');
  const hash = createHash('sha256').update(delivery.rawBody).digest();
  const account = delivery.account ?? DEFAULT_ACCOUNT;
  const { rows } = await sql<{ id: string; state: QuarantineState; deliveries: number; released_event_id: string | null }>`
    with repeated as (
      update ${table} set deliveries = deliveries + 1, last_received_at = now()
       where body_sha256 = ${hash} and account = ${account}
      returning id::text as id, state, deliveries, released_event_id
    ),
    added as (
      insert into ${table} as t (account, kind, reason, event_id, event_type, raw_body, headers, body_sha256)
      select ${account}, ${delivery.kind}, ${delivery.reason}, ${listable(delivery.eventId)}, ${listable(delivery.eventType)},
             ${Buffer.from(delivery.rawBody.buffer, delivery.rawBody.byteOffset, delivery.rawBody.byteLength)},
             ${JSON.stringify(delivery.headers)}, ${hash}
       where not exists (select 1 from repeated)
         and (select count(*) from ${table} where state = 'held') < ${maxHeld}
      -- Two first deliveries of the same bytes at once: the second counts on the first's row.
      on conflict (body_sha256, account) do update set deliveries = t.deliveries + 1, last_received_at = now()
      returning id::text as id, state, deliveries, released_event_id
    )
    select * from repeated union all select * from added`.execute(store.db);
  const row = rows[0];
  return row && { id: row.id, state: row.state, deliveries: row.deliveries, releasedEventId: row.released_event_id };
}

/** An id or type worth showing in lists: storable text, shortened; undefined otherwise. */
function listable(text: string | undefined): string | null {
  if (text === undefined || text.includes('\u0000') || /[\ud800-\udfff]/.test(text)) return null;
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}

/** Filters of {@link listQuarantined}. */
export interface QuarantineFilter {
  /** Only this account's deliveries; default every account's. */
  account?: string | undefined;
  /** Default: held only. */
  state?: QuarantineState | 'all' | undefined;
  /** Default 100. */
  limit?: number | undefined;
}

/** Lists quarantined deliveries, newest first (held ones unless told otherwise). */
export async function listQuarantined(store: PayhooksDatabase, filter: QuarantineFilter = {}): Promise<QuarantinedDelivery[]> {
  const state = filter.state ?? 'held';
  const { rows } = await sql<Row>`
    select ${summary} from ${sql.id(store.schema, 'quarantine')}
     where ${state === 'all' ? sql`true` : sql`state = ${state}`}
       and ${filter.account === undefined ? sql`true` : sql`account = ${filter.account}`}
     order by id desc limit ${filter.limit ?? 100}`.execute(store.db);
  return rows.map(toDelivery);
}

/** How many deliveries are held in quarantine (what `/metrics` shows as `payhooks_events{status="quarantined"}`). */
export async function countQuarantined(store: PayhooksDatabase): Promise<number> {
  const { rows } = await sql<{ n: number }>`
    select count(*)::int as n from ${sql.id(store.schema, 'quarantine')} where state = 'held'`.execute(store.db);
  return rows[0]?.n ?? 0;
}

/** One quarantined delivery with its bytes and headers, or undefined. `id` is the number `quarantine list` shows. */
export async function getQuarantined(store: PayhooksDatabase, id: string): Promise<QuarantinedDetail | undefined> {
  if (!QUARANTINE_ID.test(id)) return undefined;
  const { rows } = await sql<Row & { raw_body: Uint8Array; headers: string }>`
    select ${summary}, raw_body, headers from ${sql.id(store.schema, 'quarantine')} where id = ${id}::bigint`.execute(store.db);
  const row = rows[0];
  if (!row) return undefined;
  return { ...toDelivery(row), rawBody: new Uint8Array(row.raw_body), headers: JSON.parse(row.headers) as Record<string, string> };
}

/**
 * Releases a held delivery as `event`, in one transaction: the row goes from held to released in one conditional
 * statement, which locks it, so that a discard or a release of it at the same moment waits and then finds it resolved;
 * then the event is stored through the ledger, as the receiver stores it. Resolves to what storing did, or to undefined,
 * storing nothing, when the row was not held (any more). If storing fails, the row stays held.
 *
 * @example
 * const stored = await releaseHeld(store, '12', read.event); // undefined: discarded or released meanwhile
 */
export async function releaseHeld(store: PayhooksDatabase, id: string, event: IncomingEvent): Promise<StoreOutcome | undefined> {
  if (!QUARANTINE_ID.test(id)) return undefined;
  const table = sql.id(store.schema, 'quarantine');
  const release = () =>
    store.db.transaction().execute(async (trx) => {
      const { rows } = await sql`update ${table} set state = 'released', released_event_id = ${event.eventId}, resolved_at = now()
                                  where id = ${id}::bigint and state = 'held' returning id`.execute(trx);
      if (rows.length === 0) return undefined;
      const [stored] = await storeEvents({ ...store, db: trx }, [event]);
      return stored;
    });
  try {
    return await release();
  } catch (error) {
    // storeEvents makes a missing partition itself, but not inside a transaction that its failure has aborted.
    if (!isMissingPartition(error)) throw error;
    await ensureHistoryPartitions(store);
    return release();
  }
}

/**
 * Discards a held delivery in one conditional statement: its bytes and headers are dropped; the row, its reason,
 * count and hash stay, so a repeat is still answered as before. Resolves to false, changing nothing, when it was not
 * held (any more).
 */
export async function discardHeld(store: PayhooksDatabase, id: string): Promise<boolean> {
  if (!QUARANTINE_ID.test(id)) return false;
  const result = await sql`update ${sql.id(store.schema, 'quarantine')}
                              set state = 'discarded', raw_body = ''::bytea, headers = '{}', resolved_at = now()
                            where id = ${id}::bigint and state = 'held'`.execute(store.db);
  return Number(result.numAffectedRows ?? 0n) > 0;
}
