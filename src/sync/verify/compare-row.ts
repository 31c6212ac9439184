import type { InvoiceItemRow, MirrorState } from '../mirror/states.js';
import { canonicalJson } from '../../internal/canonical-json.js';

// Compares the state the mirror would hold for a record read from the API (the mapping of states.ts, so that
// verify and the mirror agree on what each column means) with the row the mirror holds. Values are compared in
// one canonical form: times as ISO instants, numeric columns as numbers, jsonb as sorted JSON.

/** One field that differs: what the mirror holds and what the service says. */
export interface FieldDiff {
  field: string;
  mirror: unknown;
  api: unknown;
}

/** A mirror row as the database returns it (`select *`), with its invoice items when it has any. */
export type MirrorRow = Record<string, unknown> & { items?: Record<string, unknown>[] };

/** The columns that hold times: compared as instants, whatever form the driver returns them in. */
const TIME_COLUMNS = new Set([
  'archived_at',
  'created_at',
  'updated_at',
  'due_date',
  'expire_date',
  'paid_at',
  'canceled_at',
  'payment_time',
]);

/**
 * Columns a row written from an event's snapshot (a mirror without an API key) cannot hold: the events do not
 * carry them (times the API adds, the collection method), or carry something else under the name (an invoice
 * event's `description` describes the event, not the invoice). Such a row is compared on the rest, so a mirror
 * fed by snapshots is not reported as drifted everywhere; `--repair` fills them from the API.
 */
const NOT_IN_EVENTS: Record<string, ReadonlySet<string>> = {
  customers: new Set(['archived_at', 'created_at', 'updated_at']),
  invoices: new Set(['collection_method', 'paid_at', 'canceled_at', 'created_at', 'description']),
  payments: new Set(['created_at']),
};

/**
 * The columns that hold the record's own times, per table: the latest of them is the version a row holds, compared
 * on both sides with the same columns (the API's updatedAt of an invoice, which the row does not keep, is not one).
 */
const VERSION_COLUMNS: Record<string, readonly string[]> = {
  customers: ['created_at', 'updated_at', 'archived_at'],
  invoices: ['created_at', 'paid_at', 'canceled_at'],
  payments: ['created_at', 'payment_time'],
};

const timeOf = (value: unknown): number =>
  value === null || value === undefined ? Number.NaN : value instanceof Date ? value.getTime() : Date.parse(String(value));

/** The latest of `columns` in `values` that holds a time; null when none does. */
function latestOf(values: Record<string, unknown>, columns: readonly string[]): number | null {
  const times = columns.map((column) => timeOf(values[column])).filter(Number.isFinite);
  return times.length ? Math.max(...times) : null;
}

/**
 * Whether a drifted row is stale rather than different: written before the record last changed (`changedAt`, by
 * the API's timestamps), or holding an older version of the record than the service's (its own times earlier: a
 * row set back in time, whenever it was written). A row from an event's snapshot is judged only on the times
 * events carry.
 *
 * @example
 * isStale(customerFromApi(apiCustomer, readAt), changedAt, row) // true: row.updated_at is before the API's updatedAt
 */
export function isStale(expected: MirrorState, changedAt: Date | null, row: MirrorRow): boolean {
  const syncedAt = timeOf(row.synced_at);
  if (changedAt !== null && Number.isFinite(syncedAt) && changedAt.getTime() > syncedAt) return true;
  const blind = row.source === 'event' ? NOT_IN_EVENTS[expected.table] : undefined;
  const columns = (VERSION_COLUMNS[expected.table] ?? []).filter((column) => !blind?.has(column));
  const held = latestOf(row, columns);
  const current = latestOf(expected.columns, columns);
  return held !== null && current !== null && held < current;
}

function instant(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  const time = value instanceof Date ? value.getTime() : Date.parse(String(value));
  return Number.isFinite(time) ? new Date(time).toISOString() : String(value);
}

/** A column's value in the canonical form, judged by the column and by the type of the API's value. */
function normalise(column: string, value: unknown, like: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (TIME_COLUMNS.has(column)) return instant(value);
  if (column === 'meta') return canonicalJson(typeof value === 'string' ? JSON.parse(value) : value);
  if (typeof like === 'number') return Number(value);
  return value;
}

function itemView(item: InvoiceItemRow | Record<string, unknown>): Record<string, unknown> {
  const row = item as Record<string, unknown>;
  return {
    description: row.description ?? null,
    amount: Number(row.amount),
    currency: row.currency,
    quantity: Number(row.quantity),
    concept_id: row.conceptId ?? row.concept_id ?? null,
  };
}

/**
 * The fields where `row` differs from `expected` (the state mapped from the API's record), in column order,
 * invoice items as one field `items`. Columns the state keeps when null (`keepWhenNull`: links the API does not
 * carry) are compared only when the API gives a value; a row from an event's snapshot is not compared on the
 * columns events cannot fill.
 *
 * @example
 * diffRow(customerFromApi(apiCustomer, readAt), row) // [{ field: 'email', mirror: 'old@example.com', api: 'new@example.com' }]
 */
export function diffRow(expected: MirrorState, row: MirrorRow): FieldDiff[] {
  const keep = new Set(expected.keepWhenNull ?? []);
  const blind = row.source === 'event' ? NOT_IN_EVENTS[expected.table] : undefined;
  const diffs: FieldDiff[] = [];
  for (const [column, apiValue] of Object.entries(expected.columns)) {
    if (apiValue === null && keep.has(column)) continue;
    if (blind?.has(column)) continue;
    const api = normalise(column, apiValue, apiValue);
    const mirror = normalise(column, row[column], apiValue);
    // meta is compared as canonical text and shown as the object it is.
    const shown = (value: unknown) => (column === 'meta' && typeof value === 'string' ? JSON.parse(value) : value);
    if (api !== mirror) diffs.push({ field: column, mirror: shown(mirror), api: shown(api) });
  }
  if (expected.items) {
    const api = expected.items.map(itemView);
    const mirror = [...(row.items ?? [])].sort((a, b) => Number(a.position) - Number(b.position)).map(itemView);
    if (canonicalJson(api) !== canonicalJson(mirror)) diffs.push({ field: 'items', mirror, api });
  }
  return diffs;
}

/** The diff of a record the mirror has no row for: every field, the mirror's side null. */
export function missingDiff(expected: MirrorState): FieldDiff[] {
  return diffRow(expected, {}).filter((diff) => diff.api !== null);
}
