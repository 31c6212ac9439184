import { sql } from 'kysely';
import { eventKey } from './accounts.js';
import type { PayhooksDatabase } from './database.js';
import { type EffectStep, listSteps } from './effect-steps.js';
import { type HandlerAttempt, handlerTimelines } from './handler-timeline.js';
import { type StoredEvent, summaryColumns, toStoredEvent } from './inbox.js';

/** One event of a resource's story: the event, every run of a handler for it, and its effect steps. */
export interface StoryEvent extends StoredEvent {
  /** Every run of a handler for it, oldest first. */
  handlerAttempts: HandlerAttempt[];
  completedHandlers: string[];
  givenUpHandlers: string[];
  /** Its `ctx.effect` steps, in the order they started. */
  effectSteps: EffectStep[];
}

/** A resource's row in the Postgres mirror as it is now. */
export interface MirrorRecord {
  /** The mirror's table, e.g. `customers`. */
  table: string;
  id: string;
  /** The row's columns as JSON (times as ISO text). */
  row: Record<string, unknown>;
}

/** What happened to one resource: see {@link resourceStory}. */
export interface ResourceStory {
  /** The resource as asked for (`invoice:inv_1`, or a bare id). */
  resource: string;
  /** The resource keys looked up: the one given, or each kind's for a bare id. */
  keys: string[];
  /** Its events in order of arrival, oldest first (the newest `limit` when there are more: see `truncated`). */
  events: StoryEvent[];
  /** True when older events were left out (more than `limit`). */
  truncated: boolean;
  /** Its rows in the mirror now; null when no mirror is in use (no mirror schema given, or its tables absent). */
  mirror: MirrorRecord[] | null;
}

/** Options of {@link resourceStory}. */
export interface StoryOptions {
  /** The mirror's schema (`payhooks_mirror` by default in serve); undefined: the mirror is not looked at. */
  mirrorSchema?: string | undefined;
  /** The most events told, the newest; default {@link DEFAULT_STORY_EVENTS}. */
  limit?: number | undefined;
  /** Only this account's events; default every account's (a resource id may be one in several accounts). */
  account?: string | undefined;
}

/** The events a story tells by default: the newest 500 of a resource (a busy customer may have thousands). */
export const DEFAULT_STORY_EVENTS = 500;

/**
 * The mirror's table of each kind of resource key (migrations/mirror/001_mirror.sql). The kinds are those of the
 * events' resource keys (`RESOURCE_KINDS` of events/resource-key.ts, which the store may not import; a test holds the
 * two lists equal).
 */
export const MIRROR_TABLES = {
  invoice: 'invoices',
  customer: 'customers',
  payment: 'payments',
  dispute: 'disputes',
  subscription: 'subscriptions',
} as const;
type ResourceKind = keyof typeof MIRROR_TABLES;
const RESOURCE_KINDS = Object.keys(MIRROR_TABLES) as ResourceKind[];

const KIND_PREFIX = new RegExp(`^(${RESOURCE_KINDS.join('|')}):(.+)$`);

/**
 * The resource keys a story looks up for what an operator typed: `invoice:inv_1` as it is, a bare id (`inv_1`) under
 * each kind. Throws a RangeError naming the kinds for `kind:id` of an unknown kind, or for an empty or blank id.
 *
 * @example
 * resourceKeysOf('customer:cus_1') // ['customer:cus_1']
 * resourceKeysOf('cus_1') // ['invoice:cus_1', 'customer:cus_1', 'payment:cus_1', 'dispute:cus_1', 'subscription:cus_1']
 */
export function resourceKeysOf(resource: string): string[] {
  const text = resource.trim();
  if (text === '' || text.includes('\u0000')) throw new RangeError('Give a resource: invoice:inv_…, customer:cus_… or a bare id.');
  const match = KIND_PREFIX.exec(text);
  if (match) return [text];
  const colon = /^([a-z_]+):/.exec(text);
  if (colon)
    throw new RangeError(`Unknown kind of resource "${colon[1]}": use ${RESOURCE_KINDS.map((k) => `${k}:`).join(', ')} or a bare id.`);
  return RESOURCE_KINDS.map((kind) => `${kind}:${text}`);
}

type SummaryRow = Parameters<typeof toStoredEvent>[0];

/**
 * The newest `wanted` events of `keys` whose history is still there, newest first. They are read from the ledger's story
 * index (migrations/025), newest first, and each one's row of the history is probed by its key: a lateral subquery
 * kept apart by its offset 0 (joined plainly, or with the subquery pulled up, the planner, which cannot count the
 * matches of a three-column key, hashed the whole history: 95 to 124 ms for 100,000 events). An event whose history
 * was pruned keeps its ledger row and is not told; the limit counts told events, so a page of the ledger that held
 * pruned ones is followed by the next (older) page, twice as long, until enough are told or the ledger ends.
 */
async function newestTold(
  store: PayhooksDatabase,
  keys: readonly string[],
  wanted: number,
  account: string | undefined,
): Promise<SummaryRow[]> {
  const ledger = sql.id(store.schema, 'event_ledger');
  const states = sql.id(store.schema, 'inbox_event_states');
  const ofAccount = account === undefined ? sql`` : sql`and l.account = ${account}`;
  const told: SummaryRow[] = [];
  let page = wanted;
  let before: string | undefined;
  for (;;) {
    const olderThan = before === undefined ? sql`` : sql`and l.seq < ${before}`;
    const { rows } = await sql<Partial<SummaryRow> & { ledger_seq: string }>`
      select l.seq::text as ledger_seq, ${sql.join(summaryColumns.map((column) => sql.ref(`e.${column}`)))}
        from (select l.event_id, l.account, l.first_received_at, l.seq from ${ledger} l
               where l.resource_key in (${sql.join(keys)}) ${ofAccount} ${olderThan}
               order by l.seq desc limit ${page}) l
        left join lateral (select * from ${states} e
                            where e.event_id = l.event_id and e.account = l.account and e.received_at = l.first_received_at
                            offset 0) e on true
       order by l.seq desc`.execute(store.db);
    for (const row of rows) if (row.event_id != null) told.push(row as SummaryRow);
    if (told.length >= wanted || rows.length < page) return told.slice(0, wanted);
    before = rows.at(-1)!.ledger_seq;
    page *= 2;
  }
}

/**
 * A resource's story: every event about it (its resource key) in order of arrival, each with every run of a handler
 * and its effect steps, and its mirror row now. One query for the events (migrations/025's index), two for the
 * handlers' runs and one for the steps, whatever the number of events, and one per mirror table.
 *
 * @example
 * const story = await resourceStory(store, 'customer:cus_1', { mirrorSchema: 'payhooks_mirror' });
 */
export async function resourceStory(store: PayhooksDatabase, resource: string, options: StoryOptions = {}): Promise<ResourceStory> {
  const keys = resourceKeysOf(resource);
  const limit = options.limit ?? DEFAULT_STORY_EVENTS;
  const rows = await newestTold(store, keys, limit + 1, options.account);
  const told = rows.slice(0, limit).reverse();
  const refs = told.map((row) => ({ account: row.account, eventId: row.event_id }));
  const [timelines, steps] = await Promise.all([handlerTimelines(store, refs), listSteps(store, refs)]);
  const stepsOf = new Map<string, EffectStep[]>();
  for (const step of steps) {
    const key = eventKey(step.account, step.eventId);
    stepsOf.set(key, [...(stepsOf.get(key) ?? []), step]);
  }
  const events = told.map((row): StoryEvent => {
    const key = eventKey(row.account, row.event_id);
    const timeline = timelines.get(key)!;
    return {
      ...toStoredEvent(row),
      handlerAttempts: timeline.attempts,
      completedHandlers: timeline.completed,
      givenUpHandlers: timeline.givenUp,
      effectSteps: stepsOf.get(key) ?? [],
    };
  });
  const mirror = options.mirrorSchema === undefined ? null : await mirrorRecords(store, options.mirrorSchema, keys, options.account);
  return { resource: resource.trim(), keys, events, truncated: rows.length > limit, mirror };
}

/**
 * The mirror's rows of the resources `keys` name (of one account, or of each that has one: the row says whose); null when
 * the mirror's tables are not in `schema`.
 */
async function mirrorRecords(
  store: PayhooksDatabase,
  schema: string,
  keys: readonly string[],
  account: string | undefined,
): Promise<MirrorRecord[] | null> {
  const { rows: present } = await sql<{ present: boolean }>`
    select to_regclass(format('%I.%I', ${schema}::text, 'customers')) is not null as present`.execute(store.db);
  if (!present[0]?.present) return null;
  const records: MirrorRecord[] = [];
  for (const key of keys) {
    const [kind, ...rest] = key.split(':');
    const id = rest.join(':');
    const table = MIRROR_TABLES[kind as ResourceKind];
    const { rows } = await sql<{ row: Record<string, unknown> }>`
      select to_jsonb(t) as row from ${sql.id(schema, table)} t
       where t.id = ${id} and ${account === undefined ? sql`true` : sql`t.account = ${account}`}`.execute(store.db);
    for (const row of rows) records.push({ table, id, row: row.row });
  }
  return records;
}
