import type { ApiClient } from '../../client/api-client.js';
import { NotFoundError } from '../../client/errors.js';
import { RepeatedPageError, RepeatedPages } from '../../client/pagination.js';
import { PayhooksError } from '../../errors.js';
import { storable } from '../../internal/storable-text.js';
import { PAGE_SIZE, type ApiCustomer, type ApiInvoice, type ApiPayment } from '../../events/rest-contract.js';
import type { PayhooksDatabase } from '../../store/database.js';
import { migrateMirror } from '../../store/migrate.js';
import { sinceKey as keyOfSince } from '../backfill.js';
import { DEFAULT_ACCOUNT } from '../../store/accounts.js';
import { assertMirrorAccount } from '../mirror/accounts.js';
import { MIRROR_DEFAULTS } from '../mirror/mirror-sink.js';
import { customerFromApi, invoiceFromApi, latestTime, type MirrorState, paymentFromApi } from '../mirror/states.js';
import { databaseNow, writeMirrorState } from '../mirror/write.js';
import { compareText } from '../../internal/compare-text.js';
import { diffRow, type FieldDiff, isStale, type MirrorRow, missingDiff } from './compare-row.js';
import { type NamedIn, type NamedTable, namedByStoredEvents, type UnmirroredRecord } from './stored-names.js';
import {
  EVENT_ONLY_TABLES,
  type EventOnlyTable,
  markRepaired,
  mirrorExists,
  mirrorPaymentIds,
  mirrorRows,
  passFindings,
  presentRows,
  randomRows,
  readCursor,
  recordStep,
  seenAmong,
  startPass,
  unseenRows,
  type VerifyTable,
} from './verify-queries.js';

// verify compares the service's records with the mirror's rows. Customers and invoices are walked through the
// list endpoints (offset paging, oldest first, as backfill); payments, which the API only reads by id, are the
// ones the mirror holds or the stored events named (their bodies, read by stored-names.ts). Every step's findings
// and the cursor move in one transaction (migrations/mirror/002_verify.sql), so an interrupted run resumes where it
// stopped and still reports what the earlier run found. Refunds, disputes, subscriptions and payment methods have
// no read in the API: each one a stored event named must have its row, and --repair writes a missing one from the
// newest state the events carry.

/**
 * The resources verify checks: customers, invoices and payments against the API; the rest (which the API cannot
 * read) through the events that named them: each must have its row.
 */
export const VERIFY_RESOURCES = ['customers', 'invoices', 'payments', 'refunds', 'disputes', 'subscriptions', 'payment_methods'] as const;
export type VerifyResource = (typeof VERIFY_RESOURCES)[number];

/** The defaults of {@link verifyMirror}. */
export const VERIFY_DEFAULTS = {
  resources: VERIFY_RESOURCES,
  /** Records per list request: the service's largest page. */
  pageSize: PAGE_SIZE.max,
  /** Payments read by id between two commits of the cursor. */
  idBatch: 50,
} as const;

/** The kinds of drift, from the mirror's point of view. */
export const DRIFT_KINDS = ['missing', 'stale', 'different', 'extra'] as const;
/**
 * `missing`: the service has the record, the mirror no row. `stale`: the row was written before the record last
 * changed (a change never reached it). `different`: the row was written after that change and still differs.
 * `extra`: a row for a record the service does not know.
 */
export type DriftKind = (typeof DRIFT_KINDS)[number];

/** One drifted record. */
export interface Drift {
  resource: VerifyResource;
  id: string;
  kind: DriftKind;
  /** Field by field: what the mirror holds and what the service says. */
  diff: FieldDiff[];
  /** With `repair`: rewritten from the API and found equal on a second read. */
  repaired: boolean;
  /** For a resource the API cannot read: the last event that named it (`--repair` writes the row from the events). */
  namedBy?: { eventId: string; eventType: string } | undefined;
}

/** How a resource's pass began (as backfill's). */
export type VerifyStart = 'fresh' | 'resumed' | 'new-pass' | 'sample' | 'events';

/** What one resource's run did. */
export interface VerifyResourceReport {
  resource: VerifyResource;
  start: VerifyStart;
  /** Records compared by this run (a resumed run: since it resumed). */
  checked: number;
  /** For a resource found through the stored events: how many finished events of its types were read. */
  events?: number | undefined;
  /** API requests this run sent for this resource (repairs counted in the report's total). */
  requests: number;
  /** Whether the pass got to the end. */
  finished: boolean;
}

/** What {@link verifyMirror} found (and repaired). */
export interface VerifyReport {
  mirrorSchema: string;
  account: string;
  since: Date | null;
  sample: number | null;
  resources: VerifyResourceReport[];
  /** Every drifted record of the passes, earlier interrupted runs' findings included. */
  drift: Drift[];
  /** Drift by kind. */
  counts: Record<DriftKind, number>;
  /** API requests of the whole run, repairs included. */
  requests: number;
  /** True when the signal stopped it before every resource finished. */
  stopped: boolean;
}

/** What {@link VerifyOptions.onProgress} hears. */
export type VerifyProgress =
  | { kind: 'start'; resource: VerifyResource; start: VerifyStart; from: number; total: number | null }
  | { kind: 'step'; resource: VerifyResource; position: number; total: number | null; checked: number; drift: number }
  | { kind: 'end'; report: VerifyResourceReport }
  | { kind: 'repair'; done: number; total: number };

/** The part of the API client verify uses. */
export type VerifyApi = Pick<ApiClient, 'customers' | 'invoices' | 'payments'>;

/** Options of {@link verifyMirror}. */
export interface VerifyOptions {
  /** The payhooks database; the mirror lives in `mirrorSchema`, the inbox in the store's schema. */
  store: PayhooksDatabase;
  /** An API client of `account` (give it the shared `createPostgresRateLimiter(store)` as `rateLimit`). */
  api: VerifyApi;
  /**
   * The account whose records `api` reads: only its mirror rows, cursors and findings are compared and written.
   * Default `default`, the implicit account of a single-account installation. Run once per account.
   */
  account?: string | undefined;
  /** Default `payhooks_mirror`. Migrated first if needed. */
  mirrorSchema?: string | undefined;
  /** In this order. Default: every one of {@link VERIFY_RESOURCES}. */
  resources?: readonly VerifyResource[] | undefined;
  /** Compare only records created or changed at or after this time (every page is still read). Default: all. */
  since?: Date | undefined;
  /**
   * Check a sample instead of everything: per resource, the newest `sample` records the service lists and
   * `sample` random rows of the mirror (read by id). Not resumable (nothing to resume). Default: everything.
   */
  sample?: number | undefined;
  /**
   * Rewrite each drifted row (but extras) through the mirror's guarded write, then read it again: from the API, or
   * for a resource the API cannot read, from the newest state the stored events carry.
   */
  repair?: boolean | undefined;
  /** Stops after the step being recorded; the next run resumes. */
  signal?: AbortSignal | undefined;
  onProgress?: ((event: VerifyProgress) => void) | undefined;
}

/** Another run of the same verify moved the cursor: two runs at once would only repeat each other's work. */
export class VerifyConflictError extends PayhooksError {
  constructor(resource: VerifyResource, key: string) {
    super(
      `Another verify of ${resource}${key ? ` since ${key}` : ''} moved the cursor while this one ran: only one run of the same verify can go at a time. ` +
        'This run stopped; the other goes on.',
    );
  }
}

/** The mirror's schema holds no mirror: nothing to verify (and not a mirror to create here). */
export class NoMirrorError extends PayhooksError {
  constructor(readonly mirrorSchema: string) {
    super(
      `There is no mirror in schema ${mirrorSchema} of this database: verify compares an existing mirror with the service. ` +
        'Run payhooks serve (it keeps the mirror) or payhooks backfill first, or set PAYHOOKS_MIRROR_SCHEMA to the schema the mirror is in.',
    );
  }
}

/**
 * Reads a `--resource` list for verify: comma-separated names, repeats dropped, in the order given.
 *
 * @example
 * parseVerifyResources('invoices,payments') // ['invoices', 'payments']
 * parseVerifyResources('refunds') // throws, naming customers, invoices, payments
 */
export function parseVerifyResources(text: string): VerifyResource[] {
  const names = [...new Set(text.split(',').map((name) => name.trim().toLowerCase()))].filter((name) => name !== '');
  const unknown = names.filter((name) => !(VERIFY_RESOURCES as readonly string[]).includes(name));
  if (names.length === 0 || unknown.length > 0) {
    throw new PayhooksError(
      `${names.length === 0 ? '--resource names no resource' : `--resource ${unknown.map((name) => JSON.stringify(name)).join(', ')} cannot be verified`}: ` +
        `the known ones are ${VERIFY_RESOURCES.join(', ')} (the resources the service's API reads; refunds, disputes, subscriptions and ` +
        'payment methods have no read to compare the mirror with).',
    );
  }
  return names as VerifyResource[];
}

/**
 * Reads a `--sample` value: a whole number from 1 to 10,000.
 *
 * @example
 * parseSample('200') // 200
 */
export function parseSample(text: string): number {
  const value = Number(text.trim());
  if (!/^\d+$/.test(text.trim()) || value < 1 || value > 10_000) {
    throw new PayhooksError(`--sample takes a whole number of records per resource from 1 to 10000, not ${JSON.stringify(text)}.`);
  }
  return value;
}

/** A record read from the API, mapped as the mirror maps it and stores it ({@link storable}). */
interface Read {
  state: MirrorState;
  /** When the record last changed, by its own timestamps. */
  changedAt: Date | null;
}

const extra = (item: object, name: string): string | undefined => {
  const value = (item as Record<string, unknown>)[name];
  return typeof value === 'string' ? value : undefined;
};

const fromCustomer = (customer: ApiCustomer, readAt: Date): Read => ({
  state: storable(customerFromApi(customer, readAt)),
  changedAt: latestTime(customer.updatedAt, customer.createdAt, customer.archivedAt),
});
const fromInvoice = (invoice: ApiInvoice, readAt: Date): Read => ({
  state: storable(invoiceFromApi(invoice, readAt)),
  changedAt: latestTime(extra(invoice, 'updatedAt'), invoice.createdAt, invoice.paidAt, invoice.canceledAt),
});
const fromPayment = (payment: ApiPayment, row: MirrorRow | undefined, readAt: Date): Read => ({
  state: storable(
    paymentFromApi(
      payment,
      { invoiceId: (row?.invoice_id as string | null) ?? null, customerId: (row?.customer_id as string | null) ?? null },
      readAt,
    ),
  ),
  changedAt: latestTime(payment.paymentTime, payment.createdAt, extra(payment, 'updatedAt')),
});

/** Reads one record by id; null when the service does not know it. */
async function readOne(
  api: VerifyApi,
  resource: VerifyTable,
  id: string,
  row: MirrorRow | undefined,
  readAt: Date,
  signal: AbortSignal | undefined,
): Promise<Read | null> {
  try {
    switch (resource) {
      case 'customers':
        return fromCustomer(await api.customers.get(id, { signal }), readAt);
      case 'invoices':
        return fromInvoice(await api.invoices.get(id, { signal }), readAt);
      case 'payments':
        return fromPayment(await api.payments.get(id, { signal }), row, readAt);
    }
  } catch (err) {
    if (err instanceof NotFoundError) return null;
    throw err;
  }
}

/** Compares one read with its row: null when they match. */
function judge(resource: VerifyResource, read: Read, row: MirrorRow | undefined): Omit<Drift, 'repaired'> | null {
  const id = read.state.id;
  if (!row) return { resource, id, kind: 'missing', diff: missingDiff(read.state) };
  const diff = diffRow(read.state, row);
  if (diff.length === 0) return null;
  return { resource, id, kind: isStale(read.state, read.changedAt, row) ? 'stale' : 'different', diff };
}

interface Run {
  options: VerifyOptions;
  schema: string;
  /** The account whose rows, cursors and findings the run reads and writes. */
  account: string;
  key: string;
  drift: Drift[];
  requests: number;
  /** What the stored events named, read once for every resource of the run that needs it. */
  named?: Promise<Map<NamedTable, NamedIn>>;
  /** The records of tables the API cannot read that have no row, by `table:id`: what --repair writes. */
  unmirrored: Map<string, UnmirroredRecord>;
}

/** What the stored events named in `table`, read on first use for every table of the run found through them. */
function namedIn(run: Run, table: NamedTable): Promise<NamedIn> {
  const { options, schema, account } = run;
  const tables = (options.resources ?? VERIFY_DEFAULTS.resources).filter(
    (resource): resource is NamedTable => resource === 'payments' || isEventOnly(resource),
  );
  run.named ??= namedByStoredEvents(options.store.db.withoutPlugins(), options.store.schema, schema, tables, {
    account,
    since: options.since ?? null,
    newest: options.sample,
    signal: options.signal,
  });
  return run.named.then((named) => named.get(table)!);
}

/**
 * Proves the mirror against the service: compares each record the API gives with its mirror row and reports
 * what is missing, stale, different or extra, field by field. Customers and invoices are walked through the
 * list endpoints within the shared rate budget; payments (read by id only) are those the mirror holds or the
 * inbox's events named. Resumable: each step commits its findings with the cursor, so a run stopped by the
 * signal or a crash goes on where it stopped when called again with the same `since`; a finished pass makes
 * the next call a new pass. With `repair`, each drifted row (extras aside: the service cannot say what they
 * should be) is rewritten from a fresh read through the mirror's guarded write and read back.
 *
 * @example
 * const api = createClient({ apiKey, baseUrl, rateLimit: createPostgresRateLimiter(store) });
 * const report = await verifyMirror({ store, api, resources: ['invoices'], repair: true });
 * report.counts // { missing: 1, stale: 2, different: 0, extra: 0 }
 */
export async function verifyMirror(options: VerifyOptions): Promise<VerifyReport> {
  const schema = options.mirrorSchema ?? MIRROR_DEFAULTS.schema;
  const resources = options.resources ?? VERIFY_DEFAULTS.resources;
  if (!(await mirrorExists(options.store.db.withoutPlugins(), schema))) throw new NoMirrorError(schema);
  // The mirror's own migrations, for the verify tables of a mirror made by an older payhooks.
  await migrateMirror(options.store, schema);
  const account = options.account ?? DEFAULT_ACCOUNT;
  await assertMirrorAccount(options.store.db, schema, account);
  const run: Run = { options, schema, account, key: keyOfSince(options.since), drift: [], requests: 0, unmirrored: new Map() };
  const report: VerifyReport = {
    mirrorSchema: schema,
    account,
    since: options.since ?? null,
    sample: options.sample ?? null,
    resources: [],
    drift: run.drift,
    counts: { missing: 0, stale: 0, different: 0, extra: 0 },
    requests: 0,
    stopped: false,
  };
  for (const resource of resources) {
    if (options.signal?.aborted) {
      report.stopped = true;
      break;
    }
    const before = run.requests;
    const done = isEventOnly(resource)
      ? await verifyThroughEvents(run, resource)
      : options.sample !== undefined
        ? await sampleResource(run, resource, options.sample)
        : resource === 'payments'
          ? await verifyById(run, resource)
          : await walkList(run, resource);
    done.requests = run.requests - before;
    report.resources.push(done);
    options.onProgress?.({ kind: 'end', report: done });
    if (!done.finished) {
      report.stopped = true;
      break;
    }
  }
  if (options.repair && !report.stopped) await repair(run);
  for (const drift of run.drift) report.counts[drift.kind]++;
  report.requests = run.requests;
  return report;
}

/** The findings an interrupted run of this pass recorded, put back into the report. */
async function earlierFindings(run: Run, resource: VerifyResource): Promise<void> {
  const rows = await passFindings(run.options.store.db.withoutPlugins(), run.schema, run.account, resource, run.key);
  for (const row of rows) {
    run.drift.push({
      resource,
      id: row.id,
      kind: row.kind as DriftKind,
      diff: row.diff as FieldDiff[],
      repaired: row.repaired_at !== null,
    });
  }
}

/** Opens or resumes a resource's pass; returns where it starts. */
async function openPass(run: Run, resource: VerifyResource): Promise<{ start: VerifyStart; from: number }> {
  const db = run.options.store.db.withoutPlugins();
  const cursor = await readCursor(db, run.schema, run.account, resource, run.key);
  if (cursor.finished_at !== null || cursor.next_skip === 0) {
    await startPass(db, run.schema, run.account, resource, run.key);
    return { start: cursor.finished_at !== null ? 'new-pass' : 'fresh', from: 0 };
  }
  await earlierFindings(run, resource);
  return { start: 'resumed', from: cursor.next_skip };
}

async function listPage(run: Run, resource: 'customers' | 'invoices', skip: number, take: number) {
  const { api, signal } = run.options;
  run.requests++;
  const readAt = await databaseNow(run.options.store.db.withoutPlugins());
  if (resource === 'customers') {
    const page = await api.customers.list({ take, skip }, { signal });
    return { reads: page.data.map((item) => fromCustomer(item, readAt)), total: page.total ?? null, take: page.take ?? null };
  }
  const page = await api.invoices.list({ take, skip }, { signal });
  return { reads: page.data.map((item) => fromInvoice(item, readAt)), total: page.total ?? null, take: page.take ?? null };
}

/** Compares reads with their rows; records that last changed before `since` are only counted as listed. */
async function compareReads(run: Run, resource: VerifyTable, reads: readonly Read[]): Promise<Omit<Drift, 'repaired'>[]> {
  const since = run.options.since;
  const compared = reads.filter((read) => since === undefined || read.changedAt === null || read.changedAt >= since);
  const rows = await mirrorRows(
    run.options.store.db.withoutPlugins(),
    run.schema,
    run.account,
    resource,
    compared.map((read) => read.state.id),
  );
  return compared.flatMap((read) => judge(resource, read, rows.get(read.state.id)) ?? []);
}

async function walkList(run: Run, resource: 'customers' | 'invoices'): Promise<VerifyResourceReport> {
  const { options, schema, account, key } = run;
  const db = options.store.db.withoutPlugins();
  const { start, from } = await openPass(run, resource);
  const report: VerifyResourceReport = { resource, start, checked: 0, requests: 0, finished: false };
  options.onProgress?.({ kind: 'start', resource, start, from, total: null });
  const pageSize = VERIFY_DEFAULTS.pageSize;
  const repeated = new RepeatedPages();
  let position = from;
  let total: number | null = null;
  while (!options.signal?.aborted) {
    let page: Awaited<ReturnType<typeof listPage>>;
    try {
      page = await listPage(run, resource, position, pageSize);
    } catch (err) {
      if (options.signal?.aborted) break;
      throw err;
    }
    const ids = page.reads.map((read) => read.state.id);
    if (repeated.repeats(ids)) throw new RepeatedPageError(position, run.requests, ids[0]!);
    const found = await compareReads(run, resource, page.reads);
    const next = position + ids.length;
    const shortPage = ids.length < Math.min(pageSize, page.take ?? pageSize);
    const end = ids.length === 0 || shortPage || (page.total !== null && next >= page.total);
    const recorded = await recordStep(db, schema, {
      account,
      resource,
      sinceKey: key,
      seen: ids,
      findings: found,
      expectedSkip: position,
      nextSkip: next,
      checked: ids.length,
      finished: false,
    });
    if (!recorded) throw new VerifyConflictError(resource, key);
    for (const drift of found) run.drift.push({ ...drift, repaired: false });
    report.checked += ids.length;
    position = next;
    total = page.total;
    options.onProgress?.({ kind: 'step', resource, position, total, checked: ids.length, drift: found.length });
    if (end) {
      await findExtras(run, resource, position);
      report.finished = true;
      break;
    }
  }
  return report;
}

/** Rows the list did not show: read by id (a record the list skipped is compared), unknown ones are extra. */
async function findExtras(run: Run, resource: VerifyTable, position: number): Promise<void> {
  const { options, schema, account, key } = run;
  const db = options.store.db.withoutPlugins();
  const unseen = await unseenRows(db, schema, account, resource, key);
  const found: Omit<Drift, 'repaired'>[] = [];
  const rows = await mirrorRows(db, schema, account, resource, unseen);
  for (const id of unseen) {
    const readAt = await databaseNow(db);
    run.requests++;
    const read = await readOne(options.api, resource, id, rows.get(id), readAt, options.signal);
    if (!read) found.push({ resource, id, kind: 'extra', diff: [] });
    else {
      const drift = judge(resource, read, rows.get(id));
      if (drift) found.push(drift);
    }
  }
  const recorded = await recordStep(db, schema, {
    account,
    resource,
    sinceKey: key,
    seen: unseen,
    findings: found,
    expectedSkip: position,
    nextSkip: position,
    checked: 0,
    finished: true,
  });
  if (!recorded) throw new VerifyConflictError(resource, key);
  for (const drift of found) run.drift.push({ ...drift, repaired: false });
}

/** Payments: the ids the mirror holds or the inbox's events named, read one by one, in batches that commit. */
async function verifyById(run: Run, resource: 'payments'): Promise<VerifyResourceReport> {
  const { options, schema, account, key } = run;
  const db = options.store.db.withoutPlugins();
  const { start } = await openPass(run, resource);
  const named = await namedIn(run, resource);
  if (options.signal?.aborted) return { resource, start, checked: 0, requests: 0, finished: false };
  const ids = [...new Set([...named.named.keys(), ...(await mirrorPaymentIds(db, schema, account, options.since ?? null))])].sort(
    compareText,
  );
  const report: VerifyResourceReport = { resource, start, checked: 0, events: named.events, requests: 0, finished: false };
  const done = await seenAmong(db, schema, account, resource, key, ids);
  const todo = ids.filter((id) => !done.has(id));
  options.onProgress?.({ kind: 'start', resource, start, from: done.size, total: ids.length });
  // The cursor of a by-id pass counts the ids checked; which ones is in verify_seen.
  let position = (await readCursor(db, schema, account, resource, key)).next_skip;
  let first = 0;
  do {
    if (options.signal?.aborted) return report;
    const batch = todo.slice(first, first + VERIFY_DEFAULTS.idBatch);
    const rows = await mirrorRows(db, schema, account, resource, batch);
    const found: Omit<Drift, 'repaired'>[] = [];
    for (const id of batch) {
      const readAt = await databaseNow(db);
      run.requests++;
      const read = await readOne(options.api, resource, id, rows.get(id), readAt, options.signal);
      if (!read) {
        // An id an event named but the mirror has no row for, and the service does not know: nothing to compare.
        if (rows.has(id)) found.push({ resource, id, kind: 'extra', diff: [] });
        continue;
      }
      if (options.since && read.changedAt !== null && read.changedAt < options.since) continue;
      const drift = judge(resource, read, rows.get(id));
      if (drift) found.push(drift);
    }
    // An empty list still records one step, which finishes the pass.
    const last = first + VERIFY_DEFAULTS.idBatch >= todo.length;
    const recorded = await recordStep(db, schema, {
      account,
      resource,
      sinceKey: key,
      seen: batch,
      findings: found,
      expectedSkip: position,
      nextSkip: position + batch.length,
      checked: batch.length,
      finished: last,
    });
    if (!recorded) throw new VerifyConflictError(resource, key);
    position += batch.length;
    for (const drift of found) run.drift.push({ ...drift, repaired: false });
    report.checked += batch.length;
    options.onProgress?.({
      kind: 'step',
      resource,
      position: done.size + first + batch.length,
      total: ids.length,
      checked: batch.length,
      drift: found.length,
    });
    first += VERIFY_DEFAULTS.idBatch;
  } while (first < todo.length);
  report.finished = true;
  return report;
}

/** A sampled check: the newest records listed (where a missed event is likeliest) and random rows by id. */
async function sampleResource(run: Run, resource: VerifyTable, sample: number): Promise<VerifyResourceReport> {
  const { options, schema, account } = run;
  const db = options.store.db.withoutPlugins();
  const report: VerifyResourceReport = { resource, start: 'sample', checked: 0, requests: 0, finished: false };
  options.onProgress?.({ kind: 'start', resource, start: 'sample', from: 0, total: null });
  const checked = new Set<string>();
  if (resource !== 'payments') {
    const head = await listPage(run, resource, 0, 1);
    const total = head.total ?? 0;
    for (let skip = Math.max(0, total - sample); skip < total && !options.signal?.aborted; skip += VERIFY_DEFAULTS.pageSize) {
      const page = await listPage(run, resource, skip, Math.min(VERIFY_DEFAULTS.pageSize, total - skip));
      for (const drift of await compareReads(run, resource, page.reads)) run.drift.push({ ...drift, repaired: false });
      for (const read of page.reads) checked.add(read.state.id);
      if (page.reads.length === 0) break;
    }
  }
  // Payments are not listed: the newest the stored events named stand for the newest records.
  const named = resource === 'payments' ? await namedIn(run, resource) : undefined;
  if (options.signal?.aborted) return report;
  const newest = named
    ? [...named.named]
        .sort(([, a], [, b]) => (a.seq === b.seq ? 0 : a.seq > b.seq ? -1 : 1))
        .slice(0, sample)
        .map(([id]) => id)
    : [];
  const ids = [...new Set([...newest, ...(await randomRows(db, schema, account, resource, sample))])].filter((id) => !checked.has(id));
  const rows = await mirrorRows(db, schema, account, resource, ids);
  for (const id of ids) {
    if (options.signal?.aborted) return report;
    run.requests++;
    const read = await readOne(options.api, resource, id, rows.get(id), await databaseNow(db), options.signal);
    checked.add(id);
    // A named payment the service does not know and the mirror has no row for: nothing to compare.
    if (!read && !rows.has(id)) continue;
    const drift = read ? judge(resource, read, rows.get(id)) : { resource, id, kind: 'extra' as const, diff: [] };
    if (drift) run.drift.push({ ...drift, repaired: false });
  }
  report.checked = checked.size;
  report.finished = true;
  return report;
}

const isEventOnly = (resource: VerifyResource): resource is EventOnlyTable => (EVENT_ONLY_TABLES as readonly string[]).includes(resource);

/**
 * A resource the API cannot read: each record a finished event named (its stored body) must have its row (nothing
 * to compare the row's content with). One step, so nothing to resume.
 */
async function verifyThroughEvents(run: Run, resource: EventOnlyTable): Promise<VerifyResourceReport> {
  const { options, schema, account, key } = run;
  const db = options.store.db.withoutPlugins();
  await readCursor(db, schema, account, resource, key);
  await startPass(db, schema, account, resource, key);
  options.onProgress?.({ kind: 'start', resource, start: 'events', from: 0, total: null });
  const named = await namedIn(run, resource);
  if (options.signal?.aborted) return { resource, start: 'events', checked: 0, requests: 0, finished: false };
  const found = [...named.unmirrored.values()]
    .sort((a, b) => compareText(a.id, b.id))
    .map((record) => {
      run.unmirrored.set(`${resource}:${record.id}`, record);
      return {
        resource,
        id: record.id,
        kind: 'missing' as const,
        diff: missingDiff(record.state),
        namedBy: { eventId: record.namedBy.eventId, eventType: record.namedBy.eventType },
      };
    });
  const recorded = await recordStep(db, schema, {
    account,
    resource,
    sinceKey: key,
    seen: [],
    findings: found,
    expectedSkip: 0,
    nextSkip: 0,
    checked: named.named.size,
    finished: true,
  });
  if (!recorded) throw new VerifyConflictError(resource, key);
  for (const drift of found) run.drift.push({ ...drift, repaired: false });
  return { resource, start: 'events', checked: named.named.size, events: named.events, requests: 0, finished: true };
}

/**
 * Rewrites each drifted row through the guarded write and reads it back: from a fresh read of the API, or for a
 * resource the API cannot read, from the newest state the stored events carry (what the mirror sink would have
 * written; the event is the write's cause).
 */
async function repair(run: Run): Promise<void> {
  const { options, schema, account, key } = run;
  const db = options.store.db.withoutPlugins();
  // Extras have nothing to be rewritten from.
  const todo = run.drift.filter((drift) => drift.kind !== 'extra' && !drift.repaired);
  let done = 0;
  for (const drift of todo) {
    const resource = drift.resource;
    if (isEventOnly(resource)) {
      const record = run.unmirrored.get(`${resource}:${drift.id}`);
      if (record) {
        const cause = { eventId: record.stateFrom.eventId, eventType: record.stateFrom.eventType };
        await db.transaction().execute((trx) => writeMirrorState(trx, schema, account, record.state, cause));
        if ((await presentRows(db, schema, account, resource, [drift.id])).has(drift.id)) {
          drift.repaired = true;
          if (options.sample === undefined) await markRepaired(db, schema, account, resource, key, [drift.id]);
        }
      }
      options.onProgress?.({ kind: 'repair', done: ++done, total: todo.length });
      continue;
    }
    const before = await mirrorRows(db, schema, account, resource, [drift.id]);
    run.requests++;
    const read = await readOne(options.api, resource, drift.id, before.get(drift.id), await databaseNow(db), options.signal);
    if (read) {
      await db.transaction().execute((trx) => writeMirrorState(trx, schema, account, read.state, null));
      const after = await mirrorRows(db, schema, account, resource, [drift.id]);
      const row = after.get(drift.id);
      if (row && diffRow(read.state, row).length === 0) {
        drift.repaired = true;
        if (options.sample === undefined) await markRepaired(db, schema, account, resource, key, [drift.id]);
      }
    }
    options.onProgress?.({ kind: 'repair', done: ++done, total: todo.length });
  }
}
