import { createHash } from 'node:crypto';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { MirrorState, MirrorTable } from './states.js';
import { canonicalJson } from '../../internal/canonical-json.js';
import { storable, storableText } from '../../internal/storable-text.js';

/** The event behind a write; null for backfill and reconciliation reads. */
export interface MirrorCause {
  eventId: string;
  eventType: string;
}

/** The tie-break of equal (state_at, rank): a hash of the state's content, the same on every run. */
export function stateHash(data: unknown): string {
  return createHash('sha256').update(canonicalJson(data)).digest('hex');
}

const table = (schema: string, name: MirrorTable | 'invoice_items') => sql.id(schema, name);

/**
 * Writes one state of an account's resource into the mirror unless the stored row is newer: an upsert keyed by
 * (account, resource id) whose
 * update applies only when the new (state_at, state_rank, state_hash) is at least the stored one. A state
 * without a time of its own counts as older than any that has one. An invoice's items are replaced with it.
 * Every string of the state, its id and `data` included, is written as {@link storable} makes it (U+0000 and lone
 * surrogates as U+FFFD: docs/mirror.md#what-the-columns-hold). Returns whether the row was written.
 *
 * @example
 * await writeMirrorState(trx, 'payhooks_mirror', ctx.account, invoiceFromApi(invoice, readAt), { eventId, eventType });
 */
export async function writeMirrorState<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  given: MirrorState,
  cause: MirrorCause | null,
): Promise<boolean> {
  const state = storable(given);
  const columns = Object.entries(state.columns).map(([name, value]) => [
    name,
    value !== null && typeof value === 'object' ? JSON.stringify(value) : value,
  ]);
  const values: Record<string, unknown> = {
    account,
    id: state.id,
    ...Object.fromEntries(columns),
    data: JSON.stringify(state.data),
    source: state.source,
    state_at: state.stateAt ? state.stateAt.toISOString() : '-infinity',
    state_rank: state.rank,
    state_hash: stateHash(state.data),
    last_event_id: cause?.eventId ?? null,
    last_event_type: cause?.eventType ?? null,
  };
  const names = Object.keys(values);
  const keep = new Set(state.keepWhenNull ?? []);
  const assignments: RawBuilder<unknown>[] = names
    .filter((name) => name !== 'id' && name !== 'account')
    .map((name) =>
      keep.has(name)
        ? sql`${sql.id(name)} = coalesce(excluded.${sql.id(name)}, t.${sql.id(name)})`
        : sql`${sql.id(name)} = excluded.${sql.id(name)}`,
    );
  assignments.push(sql`synced_at = now()`);
  const { rows } = await sql<{ id: string }>`
    insert into ${table(schema, state.table)} as t (${sql.join(names.map((name) => sql.id(name)))})
    values (${sql.join(names.map((name) => values[name]))})
    on conflict (account, id) do update set ${sql.join(assignments)}
    where (excluded.state_at, excluded.state_rank, excluded.state_hash) >= (t.state_at, t.state_rank, t.state_hash)
    returning id`.execute(db);
  const written = rows.length > 0;
  if (written && state.items) {
    await sql`delete from ${table(schema, 'invoice_items')} where account = ${account} and invoice_id = ${state.id}`.execute(db);
    if (state.items.length) {
      const itemRows = state.items.map(
        (item, position) =>
          sql`(${account}, ${state.id}, ${position}, ${item.description}, ${item.amount}, ${item.currency}, ${item.quantity}, ${item.conceptId})`,
      );
      await sql`insert into ${table(schema, 'invoice_items')} (account, invoice_id, position, description, amount, currency, quantity, concept_id)
        values ${sql.join(itemRows)}`.execute(db);
    }
  }
  return written;
}

/**
 * Marks rows as touched by an event whose read was skipped because a newer read already covers it (see
 * {@link readCoveredSince}), so `last_event_id` still names the last event that concerned each row.
 */
export async function touchMirrorRow<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  name: MirrorTable,
  id: string,
  cause: MirrorCause,
): Promise<void> {
  await sql`update ${table(schema, name)} set last_event_id = ${cause.eventId}, last_event_type = ${cause.eventType}, synced_at = now()
    where account = ${account} and id = ${storableText(id)}`.execute(db);
}

/** The database's clock now: the clock of the inbox's receipt times, which reads are stamped with to compare. */
export async function databaseNow<DB>(db: Kysely<DB>): Promise<Date> {
  const { rows } = await sql<{ now: Date | string }>`select clock_timestamp() as now`.execute(db);
  return new Date(rows[0]!.now);
}

/**
 * Whether an account's row already holds an API read that started at or after `since` (an event's receipt): such a read saw
 * the change the event announced, so reading again would fetch the same state. This is how several pending
 * events of one resource collapse into one read. Also returns the database's clock (see {@link databaseNow}),
 * which stamps the next read, in the same round trip.
 */
export async function readCoveredSince<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  name: MirrorTable,
  id: string,
  since: Date,
): Promise<{ now: Date; covered: boolean }> {
  const { rows } = await sql<{ now: Date | string; covered: boolean }>`
    select clock_timestamp() as now, exists (
      select 1 from ${table(schema, name)}
      where account = ${account} and id = ${storableText(id)} and source = 'api' and state_at >= ${since.toISOString()}::timestamptz) as covered`.execute(
    db,
  );
  return { now: new Date(rows[0]!.now), covered: rows[0]!.covered };
}
