import { type EffectStep, listSteps } from './effect-steps.js';
import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { compareText } from '../internal/compare-text.js';
import { DEFAULT_ACCOUNT, eventKey } from './accounts.js';
import type { PayhooksDatabase } from './database.js';
import { PREPARED } from './prepared-statements.js';
import { quoteIdent } from './quote-ident.js';
import { senderIdOf } from '../internal/sender-id.js';
import { ensureHistoryPartitions } from './history-partitions.js';
import { type HandlerAttempt, handlerTimelines } from './handler-timeline.js';
import type { EventStatus } from './schema.js';

/** What the receiver stores for one delivery. */
export interface IncomingEvent {
  /** The account (organization) it was delivered for; default {@link DEFAULT_ACCOUNT}. Part of its key. */
  account?: string | undefined;
  eventId: string;
  eventType: string;
  resourceKey: string | null;
  /** The exact request body, decoded as UTF-8. */
  rawBody: string;
  /** The headers worth keeping (signature, timestamp, content type, user agent), lower-case names. */
  headers: Record<string, string>;
  /**
   * The W3C `traceparent` of the span that received it, or the one the delivery carried (docs/tracing.md): every
   * processing attempt links to it. Undefined or null: none.
   */
  traceParent?: string | null | undefined;
  /**
   * The fingerprint of the schemas under which the receiver found the data certainly valid (`dataCheckFingerprint`):
   * a worker with the same one runs the handlers without parsing the body first. Undefined or null: not checked.
   */
  dataValidUnder?: string | null | undefined;
}

/** The outcome of {@link storeEvent}. */
export interface StoreOutcome {
  /** false when this eventId was already stored for its account: the delivery count went up, nothing else changed. */
  inserted: boolean;
  deliveries: number;
}

/** The NOTIFY channel on which the inbox's insert trigger (migrations/004) announces new events. */
export function newEventChannel(schema: string): string {
  return `${schema}_new_event`;
}

/**
 * Why `event` could never be stored, or undefined when it can: Postgres text holds no U+0000, and jsonb (the
 * headers column) holds neither U+0000 nor a lone surrogate. Checked before an event joins a batch, so that one
 * such delivery is refused on its own instead of failing the statement it would share with others.
 *
 * @example
 * unstorableReason({ ...event, headers: { 'user-agent': 'a\u0000b' } }) // 'the header user-agent holds …'
 */
export function unstorableReason(event: IncomingEvent): string | undefined {
  for (const [name, value] of [
    ['eventId', event.eventId],
    ['eventType', event.eventType],
    ['resource key', event.resourceKey ?? ''],
    ['body', event.rawBody],
  ] as const) {
    if (value.includes('\u0000')) return `the ${name} holds U+0000, which Postgres text cannot store`;
  }
  for (const [name, value] of Object.entries(event.headers)) {
    if (!isStorableJsonText(name) || !isStorableJsonText(value)) {
      return `the header ${JSON.stringify(name.slice(0, 64))} holds U+0000 or a lone surrogate, which jsonb cannot store`;
    }
  }
  return undefined;
}

/**
 * `headers` without the entries jsonb cannot hold (a U+0000 or a lone surrogate in the name or value), and the names
 * of those left out: what releasing a delivery quarantined for its headers stores (they are kept for the record only).
 */
export function storableHeaders(headers: Record<string, string>): { headers: Record<string, string>; dropped: string[] } {
  const kept: Record<string, string> = {};
  const dropped: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (isStorableJsonText(name) && isStorableJsonText(value)) kept[name] = value;
    else dropped.push(JSON.stringify(name.slice(0, 64)));
  }
  return { headers: kept, dropped };
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function isStorableJsonText(text: string): boolean {
  return !text.includes('\u0000') && !LONE_SURROGATE.test(text);
}

/**
 * Stores one delivery, or counts it as a repeat. A batch of one for {@link storeEvents}.
 *
 * @example
 * const { inserted } = await storeEvent(store, { eventId, eventType, resourceKey, rawBody, headers });
 */
export async function storeEvent(store: PayhooksDatabase, event: IncomingEvent): Promise<StoreOutcome> {
  const [outcome] = await storeEvents(store, [event]);
  return outcome!;
}

/**
 * Stores a batch of deliveries in one statement, and tells each whether it was new. The deduplication ledger
 * (`event_ledger`, migrations/006) decides: an eventId it already holds is a repeat, whether or not its inbox row is
 * still there (history may be pruned; the ledger is kept). Deliveries of one eventId, in the batch or before it,
 * count in the ledger row's `deliveries`; within a batch the first of them is the one that may be new. Rows are
 * written in eventId order, so two batches that share ids lock them in the same order and cannot deadlock. The
 * inbox's insert trigger queues the new events and wakes workers once. A history partition that is missing is made
 * and the batch stored again, except when `store.db` is a transaction (its failure rejects; see {@link isMissingPartition}).
 *
 * @example
 * const [first, second] = await storeEvents(store, [event, event]); // first.inserted true, second.inserted false
 */
export async function storeEvents(store: PayhooksDatabase, events: readonly IncomingEvent[]): Promise<StoreOutcome[]> {
  if (events.length === 0) return [];
  const keyOf = (event: IncomingEvent) => eventKey(event.account ?? DEFAULT_ACCOUNT, event.eventId);
  const repeats = new Map<string, number>();
  const rows: IncomingEvent[] = [];
  for (const event of events) {
    const seen = repeats.get(keyOf(event));
    if (seen === undefined) rows.push(event);
    repeats.set(keyOf(event), (seen ?? 0) + 1);
  }
  rows.sort((a, b) => compareText(a.eventId, b.eventId) || compareText(a.account ?? DEFAULT_ACCOUNT, b.account ?? DEFAULT_ACCOUNT));
  const texts = (values: (string | null)[]) => sql`${values}::text[]`;
  const ints = (values: number[]) => sql`${values}::int[]`;
  const bodies = packTexts(rows.map((e) => e.rawBody));
  const ledger = sql.id(store.schema, 'event_ledger');
  const inbox = sql.id(store.schema, 'inbox_events');
  const seqName = `${quoteIdent(store.schema)}.inbox_events_seq`;
  // One statement, one round trip per batch: the ledger row first (new, or a repeat counted), then the inbox row of
  // each new one. payload is not written at receipt: jsonb refuses some bodies that are valid JSON (a \u0000 or
  // lone-surrogate escape, a number beyond its range, very deep nesting), and a signed delivery must never be
  // answered 503 forever for that; raw_body is the record.
  const statement = sql<{ event_id: string; account: string; deliveries: number; inserted: boolean }>`${PREPARED}
    with generic_checks as (
      -- The foreign keys' checks of the account (the ledger's and the history's, a query per row each) are plans the
      -- session keeps, which plan_cache_mode = force_custom_plan (database.ts) had the planner make again for every row:
      -- two plannings per event, more than half of this statement's CPU (log_executor_stats of a drain's backlog). For
      -- this statement's transaction only (set_config's is_local), the plan cache may keep their generic plan.
      select set_config('plan_cache_mode', 'auto', true)
    ),
    incoming as (
      select i.* from generic_checks, unnest(${texts(rows.map((e) => e.eventId))}, ${texts(rows.map((e) => e.account ?? DEFAULT_ACCOUNT))},
                           ${texts(rows.map((e) => e.eventType))},
                           ${texts(rows.map((e) => e.resourceKey))}, ${ints(bodies.starts)}, ${ints(bodies.lengths)},
                           ${texts(rows.map((e) => JSON.stringify(e.headers)))}, ${texts(rows.map((_, i) => bodySha256(bodyBytes(bodies, i))))},
                           ${ints(rows.map((e) => repeats.get(keyOf(e))!))},
                           ${texts(rows.map((e) => e.traceParent ?? null))}, ${texts(rows.map((e) => e.dataValidUnder ?? null))},
                           ${texts(rows.map((e) => senderIdOf(e.headers)))})
             as i(event_id, account, event_type, resource_key, body_start, body_length, headers, body_sha256, deliveries, trace_parent,
                  data_valid_under, sender_id)
    ),
    ledger as (
      -- The history row's seq is taken here (its order of arrival, which the ledger's story index keeps: migrations/025);
      -- a repeat uses one up and leaves a gap, as a conflicting insert always did.
      insert into ${ledger} as t (event_id, account, body_sha256, deliveries, resource_key, seq, sender_id)
      select event_id, account, decode(body_sha256, 'hex'), deliveries, resource_key, nextval(${seqName}::regclass), sender_id
        from incoming order by event_id, account
      on conflict (event_id, account) do update set deliveries = t.deliveries + excluded.deliveries
      -- xmax is 0 on a freshly inserted row version and set on one the conflict branch updated.
      returning event_id, account, deliveries, first_received_at, seq, (xmax = 0) as inserted
    ),
    added as (
      -- received_at is the ledger's first_received_at (both now() of this statement): the history's partition key, which
      -- anything holding only an eventId finds in the ledger.
      insert into ${inbox} (event_id, account, event_type, resource_key, raw_body, payload, headers, deliveries, received_at,
                            trace_parent, data_valid_under, seq)
      select i.event_id, i.account, i.event_type, i.resource_key,
             convert_from(substring(${bodies.bytes}::bytea from i.body_start for i.body_length), 'UTF8'),
             null, i.headers::jsonb, i.deliveries, l.first_received_at, i.trace_parent, i.data_valid_under, l.seq
        from incoming i join ledger l on l.event_id = i.event_id and l.account = i.account
       where l.inserted
       order by i.event_id, i.account
      returning event_id, account
    )
    select l.event_id, l.account, l.deliveries, (a.event_id is not null) as inserted
      from ledger l left join added a on a.event_id = l.event_id and a.account = l.account
  `;
  const { rows: stored } = await statement.execute(store.db).catch(async (error: unknown) => {
    // Workers keep partitions ready ahead of time; a receiver that runs alone (or after days with no worker) makes
    // the one it needs rather than answer 503 until a worker comes. Not inside a transaction: the failed statement has
    // aborted it, so the caller makes the partition and runs its transaction again.
    if (!isMissingPartition(error) || store.db.isTransaction) throw error;
    await ensureHistoryPartitions(store);
    return statement.execute(store.db);
  });
  const byKey = new Map(stored.map((row) => [eventKey(row.account, row.event_id), row]));
  const answered = new Set<string>();
  return events.map((event) => {
    const row = byKey.get(keyOf(event));
    if (!row) throw new Error(`storing a batch returned no row for one of its events (${stored.length} rows for ${rows.length} ids)`);
    const first = !answered.has(keyOf(event));
    answered.add(keyOf(event));
    return { inserted: first && row.inserted, deliveries: row.deliveries };
  });
}

/**
 * Whether `error` is Postgres' answer to a row whose receipt time no partition of the history covers: a caller that
 * stored inside its own transaction makes the partition (`ensureHistoryPartitions`) and runs the transaction again.
 */
export function isMissingPartition(error: unknown): boolean {
  return (error as { code?: unknown }).code === '23514' && /no partition of relation/.test(String((error as Error).message));
}

/**
 * `texts` as one run of UTF-8 bytes, with the 1-based start and the length in bytes of each: how a batch sends its
 * bodies. A Buffer goes to PostgreSQL as a binary parameter, byte for byte, where a text[] of 2 KB bodies is written
 * out by the driver with every quote and backslash escaped and read back by the server a character at a time (the
 * driver's escaping alone was 6% of the receiver's CPU).
 *
 * @example
 * packTexts(['ab', 'é']) // { bytes: <61 62 c3 a9>, starts: [1, 3], lengths: [2, 2] }
 */
function packTexts(texts: readonly string[]): { bytes: Buffer; starts: number[]; lengths: number[] } {
  const lengths = texts.map((text) => Buffer.byteLength(text, 'utf8'));
  const bytes = Buffer.allocUnsafe(lengths.reduce((sum, length) => sum + length, 0));
  const starts: number[] = [];
  let offset = 0;
  for (const text of texts) {
    starts.push(offset + 1);
    offset += bytes.write(text, offset, 'utf8');
  }
  return { bytes, starts, lengths };
}

/** The bytes of text `i` of {@link packTexts}' run. */
function bodyBytes(packed: { bytes: Buffer; starts: number[]; lengths: number[] }, i: number): Buffer {
  const start = packed.starts[i]! - 1;
  return packed.bytes.subarray(start, start + packed.lengths[i]!);
}

/** The SHA-256 of a body's UTF-8 bytes, in hex: what the ledger keeps of it. */
function bodySha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** An inbox row as operators and the CLI see it. */
export interface StoredEvent {
  /** The account (organization) it belongs to. */
  account: string;
  eventId: string;
  eventType: string;
  resourceKey: string | null;
  status: EventStatus;
  attempts: number;
  deliveries: number;
  lastError: string | null;
  receivedAt: Date;
  nextAttemptAt: Date;
  processedAt: Date | null;
}

/** A stored event with its body and headers, for `events show`. */
export interface StoredEventDetail extends StoredEvent {
  rawBody: string;
  headers: Record<string, string>;
  /** Handlers that completed for it. */
  completedHandlers: string[];
  /** Handlers that gave up on it (dead-lettered, or ran out of attempts): why the event is `dead`; replay runs them again. */
  givenUpHandlers: string[];
  /** Every run of a handler for it, oldest first: the timeline `events show` and the console's detail view print. */
  handlerAttempts: HandlerAttempt[];
  /** Its `ctx.effect` steps, in the order they started (docs/effects.md). */
  effectSteps: EffectStep[];
}

export type { HandlerAttempt } from './handler-timeline.js';

/** Which events {@link countEventsByStatus} counts: all, or those of a state and/or a type. */
export interface EventsFilter {
  /** Only this account's events; default every account's. */
  account?: string | undefined;
  status?: EventStatus | undefined;
  eventType?: string | undefined;
}

/** Filters of {@link listEvents}. */
export interface ListEventsFilter extends EventsFilter {
  /** Default 100. */
  limit?: number | undefined;
}

/** The columns of a {@link StoredEvent}. */
export const summaryColumns = [
  'account',
  'event_id',
  'event_type',
  'resource_key',
  'status',
  'attempts',
  'deliveries',
  'last_error',
  'received_at',
  'next_attempt_at',
  'processed_at',
] as const;

type SummaryRow = {
  account: string;
  event_id: string;
  event_type: string;
  resource_key: string | null;
  status: EventStatus;
  attempts: number;
  deliveries: number;
  last_error: string | null;
  received_at: Date;
  next_attempt_at: Date;
  processed_at: Date | null;
};

/** An inbox row read with {@link summaryColumns}, as operators see it. */
export function toStoredEvent(row: SummaryRow): StoredEvent {
  return {
    account: row.account,
    eventId: row.event_id,
    eventType: row.event_type,
    resourceKey: row.resource_key,
    status: row.status,
    attempts: row.attempts,
    deliveries: row.deliveries,
    lastError: row.last_error,
    receivedAt: row.received_at,
    nextAttemptAt: row.next_attempt_at,
    processedAt: row.processed_at,
  };
}

/** Lists stored events, newest first. */
export async function listEvents(store: PayhooksDatabase, filter: ListEventsFilter = {}): Promise<StoredEvent[]> {
  let query = store.db
    .selectFrom('inbox_event_states')
    .select(summaryColumns)
    .orderBy('seq', 'desc')
    .limit(filter.limit ?? 100);
  if (filter.account) query = query.where('account', '=', filter.account);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.eventType) query = query.where('event_type', '=', filter.eventType);
  const rows = await query.execute();
  return rows.map(toStoredEvent);
}

/**
 * One stored event with its body, headers and the handlers that completed for it or gave up; undefined if absent.
 * Without `account`, the eventId is looked up in every account, and the one received first is returned.
 */
export async function getEvent(store: PayhooksDatabase, eventId: string, account?: string): Promise<StoredEventDetail | undefined> {
  let query = store.db
    .selectFrom('inbox_event_states')
    .select([...summaryColumns, 'raw_body', 'headers'])
    .where('event_id', '=', eventId)
    .orderBy('seq')
    .limit(1);
  if (account !== undefined) query = query.where('account', '=', account);
  const row = await query.executeTakeFirst();
  if (!row) return undefined;
  const ref = { account: row.account, eventId };
  const timeline = (await handlerTimelines(store, [ref])).get(eventKey(row.account, eventId))!;
  const rawBody =
    store.kind === 'pglite' && row.raw_body.startsWith('{') ? await exactRawBody(store, row.account, eventId, row.raw_body) : row.raw_body;
  return {
    ...toStoredEvent(row),
    rawBody,
    headers: row.headers,
    completedHandlers: timeline.completed,
    givenUpHandlers: timeline.givenUp,
    handlerAttempts: timeline.attempts,
    effectSteps: await listSteps(store, [ref]),
  };
}

const keepingBom = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * PGlite decodes text results with a decoder that drops a leading byte order mark, so a body stored with one (it
 * is part of the signed bytes) comes back without it. Read such a body's bytes instead, so that what
 * `events show` prints is byte for byte what was signed. One more small query per event shown on PGlite (an
 * operator's path, not the worker's, which skips the mark anyway).
 */
async function exactRawBody(store: PayhooksDatabase, account: string, eventId: string, decoded: string): Promise<string> {
  const { rows } = await sql<{ bytes: Uint8Array | null }>`
    select case when left(raw_body, 1) = '{' then null else convert_to(raw_body, 'UTF8') end as bytes
      from ${sql.id(store.schema, 'inbox_events')} where event_id = ${eventId} and account = ${account}`.execute(store.db);
  const bytes = rows[0]?.bytes;
  return bytes ? keepingBom.decode(bytes) : decoded;
}

/** The number of events in each state; a state with none is absent. */
export type StatusCounts = Partial<Record<EventStatus, number>>;

/**
 * Counts the events that match `filter`, per state, in one query: their sum is how many {@link listEvents}
 * would show without a limit.
 *
 * @example
 * await countEventsByStatus(store, { eventType: 'INVOICE_PAID' }) // { pending: 2, done: 40 }
 */
export async function countEventsByStatus(store: PayhooksDatabase, filter: EventsFilter = {}): Promise<StatusCounts> {
  let query = store.db
    .selectFrom('inbox_event_states')
    .select(['status', sql<number>`count(*)::int`.as('count')])
    .groupBy('status');
  if (filter.account) query = query.where('account', '=', filter.account);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.eventType) query = query.where('event_type', '=', filter.eventType);
  const rows = await query.execute();
  return Object.fromEntries(rows.map((row) => [row.status, row.count]));
}

/** How many events of one type are in one state (a row of {@link countEventsByTypeAndStatus}). */
export interface TypeStatusCount {
  eventType: string;
  status: EventStatus;
  count: number;
}

/**
 * Counts every stored event by type and state, in one query, ordered by type: what `events stats` tabulates.
 *
 * @example
 * await countEventsByTypeAndStatus(store) // [{ eventType: 'INVOICE_PAID', status: 'done', count: 40 }, …]
 */
export async function countEventsByTypeAndStatus(store: PayhooksDatabase, account?: string): Promise<TypeStatusCount[]> {
  let query = store.db
    .selectFrom('inbox_event_states')
    .select(['event_type', 'status', sql<number>`count(*)::int`.as('count')])
    .groupBy(['event_type', 'status'])
    .orderBy('event_type')
    .orderBy('status');
  if (account !== undefined) query = query.where('account', '=', account);
  const rows = await query.execute();
  return rows.map((row) => ({ eventType: row.event_type, status: row.status, count: row.count }));
}

/** The pending event received first, and how long ago that was (by the database's clock). */
export interface OldestPending {
  account: string;
  eventId: string;
  receivedAt: Date;
  ageMs: number;
  /** Its resource key (`invoice:inv_…`), or null when its type names none. */
  resourceKey: string | null;
  /**
   * Queued events of that resource, this one included (1 without a key). Events of one resource run one at a time, in
   * order, so many here mean one busy resource (docs/storage.md), or an earlier event of it waiting for a retry.
   */
  queuedForResource: number;
}

/**
 * The oldest `pending` event (the head of the backlog), or undefined when nothing is pending. Its age says
 * how far behind the worker is.
 *
 * @example
 * const oldest = await oldestPendingEvent(store); // { eventId: 'evt_1', receivedAt, ageMs: 5400000, resourceKey: 'invoice:inv_1', queuedForResource: 1 }
 */
export async function oldestPendingEvent(store: PayhooksDatabase): Promise<OldestPending | undefined> {
  // From the queue alone, which holds only unfinished events with their receipt times (an operator's query: it sorts
  // the backlog by receipt time). Joined with the history for the same columns, it cost 110 ms a call in a queue of
  // 30,000 (log of statement times in a drain), read twice a drain by the worker's health readings.
  const row = await store.db
    .selectFrom('inbox_queue as q')
    .select([
      'q.account',
      'q.event_id',
      'q.received_at',
      'q.resource_key',
      sql<number>`(extract(epoch from now() - q.received_at) * 1000)::float8`.as('age_ms'),
      // One probe of the queue's resource index, for the one event returned.
      sql<number>`case when q.resource_key is null then 1 else (select count(*)::int from ${sql.id(store.schema, 'inbox_queue')} o
                     where o.resource_key = q.resource_key and o.account = q.account) end`.as('queued_for_resource'),
    ])
    .where('q.lease_owner', 'is', null)
    .orderBy('q.received_at')
    .orderBy('q.seq')
    .limit(1)
    .executeTakeFirst();
  return (
    row && {
      account: row.account,
      eventId: row.event_id,
      receivedAt: row.received_at,
      ageMs: Math.max(0, Math.round(row.age_ms)),
      resourceKey: row.resource_key,
      queuedForResource: row.queued_for_resource,
    }
  );
}
