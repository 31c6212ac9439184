import { sql, type RawBuilder } from 'kysely';
import type { ApiClient } from '../client/api-client.js';
import { RepeatedPageError, RepeatedPages } from '../client/pagination.js';
import { PayhooksError } from '../errors.js';
import { PAGE_SIZE, type ApiCustomer, type ApiInvoice, type ListPage } from '../events/rest-contract.js';
import type { PayhooksDatabase } from '../store/database.js';
import { migrateMirror } from '../store/migrate.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import { assertMirrorAccount } from './mirror/accounts.js';
import { MIRROR_DEFAULTS } from './mirror/mirror-sink.js';
import { customerFromApi, invoiceFromApi, latestTime, type MirrorState } from './mirror/states.js';
import { databaseNow, writeMirrorState } from './mirror/write.js';

// Backfill fills the Postgres mirror from the service's list endpoints, page by page, with the same guarded
// upserts the mirror sink uses, and keeps a cursor per (account, resource, --since) in the mirror's backfill_cursors
// table so that an interrupted run resumes where it stopped.
//
// Paging is by offset (take/skip: the only paging the service offers), over lists kept oldest first. Records
// created while a backfill runs land at the end and are read by a later page; a record deleted before the
// cursor would shift the later ones back by one and one record would be missed. The service shows no deletion
// of customers or invoices (archiving and canceling keep the record in place), so this is acceptable; webhook
// events keep the mirror current from then on anyway.

/** The resources backfill can read: the only ones the service's API lists. */
export const BACKFILL_RESOURCES = ['customers', 'invoices'] as const;
export type BackfillResource = (typeof BACKFILL_RESOURCES)[number];

/** The defaults of {@link runBackfill}. */
export const BACKFILL_DEFAULTS = {
  /** Records per request: the service's largest page, so a full pass costs as few of the shared budget's requests as it can. */
  pageSize: PAGE_SIZE.max,
  resources: BACKFILL_RESOURCES,
} as const;

/** The part of the API client backfill uses. */
export type BackfillApi = Pick<ApiClient, 'customers' | 'invoices'>;

/** Options of {@link runBackfill}. */
export interface BackfillOptions {
  /** The payhooks database; the mirror lives in `mirrorSchema` of the same database. */
  store: PayhooksDatabase;
  /** An API client of `account` (give it the shared `createPostgresRateLimiter(store)` as `rateLimit`). */
  api: BackfillApi;
  /**
   * The account whose records `api` lists: its rows and cursors are the ones written. Default `default`, the
   * implicit account of a single-account installation. Run once per account, each with that account's client.
   */
  account?: string | undefined;
  /** Default `payhooks_mirror`. Migrated first if needed. */
  mirrorSchema?: string | undefined;
  /** In this order. Default: customers, then invoices. */
  resources?: readonly BackfillResource[] | undefined;
  /** Write only records created or changed at or after this time (every page is still read). Default: all. */
  since?: Date | undefined;
  /** Stops after the page being written (a page whose request is still in flight is dropped and read again by the next run). */
  signal?: AbortSignal | undefined;
  /** Called as each resource starts, after each page is committed, and as each resource ends. */
  onProgress?: ((event: BackfillProgress) => void) | undefined;
}

/** How a resource's run began. */
export type BackfillStart =
  /** No cursor, or one that never got past its first page. */
  | 'fresh'
  /** An unfinished cursor: the run goes on from its `next_skip`. */
  | 'resumed'
  /** The last pass finished: this run reads everything again from the start. */
  | 'new-pass';

/** What {@link BackfillOptions.onProgress} hears. */
export type BackfillProgress =
  | {
      kind: 'start';
      resource: BackfillResource;
      start: BackfillStart;
      /** The offset the run starts at. */
      from: number;
      /** Records the pass had written before this run. */
      writtenBefore: number;
      /** When the previous pass finished (for `new-pass`). */
      lastFinishedAt: Date | null;
    }
  | {
      kind: 'page';
      resource: BackfillResource;
      /** Records of the list read so far in this pass (the cursor's `next_skip`, now committed). */
      position: number;
      /** The list's length as the service reported it with this page; null when it does not say. */
      total: number | null;
      /** Records on this page. */
      read: number;
      /** Of them, rows written. */
      written: number;
    }
  | { kind: 'end'; report: BackfillResourceReport };

/** What one resource's run did. */
export interface BackfillResourceReport {
  resource: BackfillResource;
  /** The cursor's key: the `since` time in ISO form, or `''` for all. */
  sinceKey: string;
  start: BackfillStart;
  /** The offset this run started at. */
  from: number;
  /** The offset it reached (the cursor's `next_skip`). */
  position: number;
  /** The list's length as the service last reported it; null when it does not say. */
  total: number | null;
  /** List requests this run sent (the client's retries of one request not counted). */
  requests: number;
  /** Records read by this run. */
  read: number;
  /** Rows written by this run. */
  written: number;
  /** Rows written by the whole pass, earlier interrupted runs included. */
  writtenInPass: number;
  /** Records left alone because they last changed before `since`. */
  olderThanSince: number;
  /** Records not written because the mirror already holds a newer state (an event received after this read began). */
  keptNewer: number;
  /** Whether the pass reached the end of the list. */
  finished: boolean;
}

/** What {@link runBackfill} did. */
export interface BackfillReport {
  mirrorSchema: string;
  account: string;
  since: Date | null;
  /** The resources it got to, in order; one stopped part-way is there with `finished: false`. */
  resources: BackfillResourceReport[];
  /** True when the signal stopped it before every resource finished. */
  stopped: boolean;
}

/** Another run of the same backfill moved the cursor: two runs at once would only repeat each other's work. */
export class BackfillConflictError extends PayhooksError {
  constructor(
    readonly resource: BackfillResource,
    readonly sinceKey: string,
  ) {
    super(
      `Another backfill of ${resource}${sinceKey ? ` since ${sinceKey}` : ''} moved the cursor while this one ran: ` +
        'only one run of the same backfill can go at a time. This run stopped (its last page was not written); the other goes on.',
    );
  }
}

/**
 * The cursor key of a `since` time: its ISO form, so `2025-01-01` and `2025-01-01T00:00:00Z` share a cursor.
 *
 * @example
 * sinceKey(undefined) // ''
 * sinceKey(new Date('2025-01-01')) // '2025-01-01T00:00:00.000Z'
 */
export function sinceKey(since: Date | undefined | null): string {
  return since ? since.toISOString() : '';
}

const SINCE_FORMAT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/i;

/**
 * Reads a `--since` value: a date (`2025-01-31`, midnight UTC) or an ISO 8601 time with `Z` or an offset.
 * A time without a zone is refused: it would mean different instants on different machines.
 *
 * @example
 * parseSince('2025-01-31') // 2025-01-31T00:00:00.000Z
 * parseSince('2025-01-31T12:00:00+01:00') // 2025-01-31T11:00:00.000Z
 */
export function parseSince(text: string): Date {
  const value = text.trim();
  const match = SINCE_FORMAT.exec(value);
  const refuse = (why: string) =>
    new PayhooksError(
      `--since takes a date such as 2025-01-31 (midnight UTC) or an ISO 8601 time with a zone such as 2025-01-31T12:00:00Z; ${JSON.stringify(text)} ${why}.`,
    );
  if (!match) {
    throw refuse(/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?$/.test(value) ? 'has no zone (add Z or an offset)' : 'is not one');
  }
  const [, year, month, day, hour = '0', minute = '0', second = '0'] = match;
  // Date.parse rolls 2025-02-30 over to March 2; a calendar day that does not exist is a typo.
  const calendar = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour), Number(minute), Number(second)));
  const valid =
    calendar.getUTCFullYear() === Number(year) &&
    calendar.getUTCMonth() === Number(month) - 1 &&
    calendar.getUTCDate() === Number(day) &&
    calendar.getUTCHours() === Number(hour) &&
    calendar.getUTCMinutes() === Number(minute) &&
    calendar.getUTCSeconds() === Number(second);
  const time = Date.parse(match[4] === undefined ? `${year}-${month}-${day}T00:00:00Z` : value.replace(' ', 'T'));
  if (!valid || !Number.isFinite(time)) throw refuse('is not a real date or time');
  return new Date(time);
}

/**
 * Reads a `--resource` list: comma-separated names, repeats dropped, in the order given.
 *
 * @example
 * parseResources('invoices, customers') // ['invoices', 'customers']
 * parseResources('payments') // throws: backfill reads customers, invoices; …
 */
export function parseResources(text: string): BackfillResource[] {
  const names = [...new Set(text.split(',').map((name) => name.trim().toLowerCase()))].filter((name) => name !== '');
  const unknown = names.filter((name) => !(BACKFILL_RESOURCES as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0) {
    throw new PayhooksError(
      `${names.length === 0 ? '--resource names no resource' : `--resource ${unknown.map((name) => JSON.stringify(name)).join(', ')} cannot be backfilled`}: ` +
        `the valid ones are ${BACKFILL_RESOURCES.join(', ')} (the only resources the service's API lists; payments, refunds, disputes, ` +
        'subscriptions and payment methods reach the mirror through webhook events).',
    );
  }
  return names as BackfillResource[];
}

/** One record of a page, mapped for the mirror. */
interface PageRecord {
  state: MirrorState;
  /** When the record last changed, by its own timestamps; null when it carries none. */
  changedAt: Date | null;
}

interface ReadPage {
  records: PageRecord[];
  total: number | null;
  take: number | null;
}

function pageOf<T>(page: ListPage<T>, map: (item: T) => PageRecord): ReadPage {
  return { records: page.data.map(map), total: page.total ?? null, take: page.take ?? null };
}

/** Text of a field the contract does not declare but a loose object keeps (a service that adds `updatedAt`). */
const extra = (item: object, name: string): string | undefined => {
  const value = (item as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
};

// "Changed" is the latest of the record's own timestamps, not only `updatedAt ?? createdAt`: an invoice has no
// updatedAt, and one created before --since but paid or canceled after it has changed since.
const READERS: Record<
  BackfillResource,
  (api: BackfillApi, query: { take: number; skip: number }, readAt: Date, signal?: AbortSignal) => Promise<ReadPage>
> = {
  customers: async (api, query, readAt, signal) =>
    pageOf(await api.customers.list(query, { signal }), (customer: ApiCustomer) => ({
      state: customerFromApi(customer, readAt),
      changedAt: latestTime(customer.updatedAt, customer.createdAt, customer.archivedAt),
    })),
  invoices: async (api, query, readAt, signal) =>
    pageOf(await api.invoices.list(query, { signal }), (invoice: ApiInvoice) => ({
      state: invoiceFromApi(invoice, readAt),
      changedAt: latestTime(extra(invoice, 'updatedAt'), invoice.createdAt, invoice.paidAt, invoice.canceledAt),
    })),
};

interface CursorRow {
  next_skip: number;
  written: number;
  finished_at: Date | string | null;
}

/**
 * Fills the mirror from the service's list endpoints: for each resource, pages of 100 from where its cursor
 * stopped, each page's rows written with the mirror sink's guarded upsert (a row newer than the read is kept)
 * and the cursor advanced in the same transaction, so a kill at any instant leaves the cursor exactly at the
 * rows written. A finished cursor makes the next run a new pass from the start. With `since`, records that
 * last changed before it are read but not written, under a cursor of their own.
 *
 * Stops cleanly on `signal` (the page being written is committed, one still in flight is dropped) and
 * returns `stopped: true`; running again resumes. API and database errors are thrown, with the cursor at the
 * last committed page.
 *
 * @example
 * const store = await openDatabase({ url: process.env.DATABASE_URL });
 * await migrate(store);
 * const api = createClient({ apiKey, baseUrl, rateLimit: createPostgresRateLimiter(store) });
 * const report = await runBackfill({ store, api, account: 'gym-north', resources: ['customers'], since: new Date('2025-01-01') });
 * // report.resources[0]: { resource: 'customers', read: 1000, written: 120, olderThanSince: 880, finished: true, … }
 */
export async function runBackfill(options: BackfillOptions): Promise<BackfillReport> {
  const mirrorSchema = options.mirrorSchema ?? MIRROR_DEFAULTS.schema;
  const resources = options.resources ?? BACKFILL_DEFAULTS.resources;
  await migrateMirror(options.store, mirrorSchema);
  const account = options.account ?? DEFAULT_ACCOUNT;
  await assertMirrorAccount(options.store.db, mirrorSchema, account);
  const report: BackfillReport = { mirrorSchema, account, since: options.since ?? null, resources: [], stopped: false };
  for (const resource of resources) {
    if (options.signal?.aborted) {
      report.stopped = true;
      break;
    }
    const done = await backfillResource(options, { schema: mirrorSchema, account }, resource);
    report.resources.push(done);
    options.onProgress?.({ kind: 'end', report: done });
    if (!done.finished) {
      report.stopped = true;
      break;
    }
  }
  return report;
}

async function backfillResource(
  options: BackfillOptions,
  { schema, account }: { schema: string; account: string },
  resource: BackfillResource,
): Promise<BackfillResourceReport> {
  const { store, api, signal, since } = options;
  const db = store.db.withoutPlugins();
  const key = sinceKey(since);
  const cursors = sql.id(schema, 'backfill_cursors');
  const where = sql`account = ${account} and resource = ${resource} and since_key = ${key}`;

  await sql`insert into ${cursors} (account, resource, since_key) values (${account}, ${resource}, ${key}) on conflict do nothing`.execute(
    db,
  );
  const { rows } = await sql<CursorRow>`select next_skip, written, finished_at from ${cursors} where ${where}`.execute(db);
  const cursor = rows[0]!;
  const lastFinishedAt = cursor.finished_at === null ? null : new Date(cursor.finished_at);
  const start: BackfillStart = lastFinishedAt ? 'new-pass' : cursor.next_skip > 0 ? 'resumed' : 'fresh';
  const from = start === 'new-pass' ? 0 : cursor.next_skip;
  const report: BackfillResourceReport = {
    resource,
    sinceKey: key,
    start,
    from,
    position: from,
    total: null,
    requests: 0,
    read: 0,
    written: 0,
    writtenInPass: start === 'new-pass' ? 0 : cursor.written,
    olderThanSince: 0,
    keptNewer: 0,
    finished: false,
  };
  options.onProgress?.({ kind: 'start', resource, start, from, writtenBefore: report.writtenInPass, lastFinishedAt });

  // What the cursor must still look like when a page commits: anything else means another run moved it.
  let expected: RawBuilder<unknown> = lastFinishedAt ? sql`finished_at is not null` : sql`next_skip = ${from} and finished_at is null`;
  const pageSize = BACKFILL_DEFAULTS.pageSize;
  const repeated = new RepeatedPages();
  while (!report.finished && !signal?.aborted) {
    // The database's clock, as event receipt times are: the guard compares the two. Taken before the request
    // (and any wait for the rate budget), so the stamp is never later than the state read: the safe side.
    const readAt = await databaseNow(db);
    let page: ReadPage;
    try {
      page = await READERS[resource](api, { take: pageSize, skip: report.position }, readAt, signal);
    } catch (err) {
      if (signal?.aborted) break;
      throw err;
    }
    report.requests++;
    // A service that ignores skip answers the same page forever, each request out of the shared API budget.
    if (repeated.repeats(page.records.map((record) => record.state.id))) {
      const error = new RepeatedPageError(report.position, report.requests, page.records[0]!.state.id);
      throw new PayhooksError(`Backfill of ${resource} stopped, the cursor left at ${report.position}: ${PayhooksError.describe(error)}`, {
        cause: error,
      });
    }
    const fresh = page.records.filter((record) => since === undefined || record.changedAt === null || record.changedAt >= since);
    const next = report.position + page.records.length;
    // As iteratePages: a short or empty page, or the reported total reached, is the end of the list.
    const shortPage = page.records.length < Math.min(pageSize, page.take ?? pageSize);
    const finished = page.records.length === 0 || shortPage || (page.total !== null && next >= page.total);
    let written = 0;
    await db.transaction().execute(async (trx) => {
      for (const record of fresh) if (await writeMirrorState(trx, schema, account, record.state, null)) written++;
      const moved = await sql<{ resource: string }>`
        update ${cursors}
        set next_skip = ${next}, written = ${report.writtenInPass + written},
            finished_at = ${finished ? sql`now()` : sql`null`}, updated_at = now()
        where ${where} and ${expected}
        returning resource`.execute(trx);
      if (moved.rows.length === 0) throw new BackfillConflictError(resource, key);
    });
    expected = sql`next_skip = ${next} and finished_at is null`;
    report.position = next;
    report.total = page.total;
    report.read += page.records.length;
    report.written += written;
    report.writtenInPass += written;
    report.olderThanSince += page.records.length - fresh.length;
    report.keptNewer += fresh.length - written;
    report.finished = finished;
    options.onProgress?.({ kind: 'page', resource, position: next, total: page.total, read: page.records.length, written });
  }
  return report;
}
