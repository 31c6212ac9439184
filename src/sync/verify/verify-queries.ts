import { type Kysely, sql } from 'kysely';
import type { MirrorRow } from './compare-row.js';

// The SQL of `payhooks verify`, one statement per function, on the tables of migrations/mirror/002_verify.sql
// and the mirror's own. `db` is the store's Kysely without plugins (raw rows, as the mirror writes them). Every
// mirror-side statement is of one account's rows, cursors and findings (migrations/mirror/003): a pass of one
// account reads that account's API and must neither see nor touch another's.

/** The resources verify reads, with the mirror table each is kept in. */
export type VerifyTable = 'customers' | 'invoices' | 'payments';

/** A finding as stored. */
export interface FindingRow {
  id: string;
  kind: string;
  diff: unknown;
  repaired_at: Date | string | null;
}

/** The mirror's rows of `ids` (with their items for invoices), by id. */
export async function mirrorRows<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  table: VerifyTable,
  ids: readonly string[],
): Promise<Map<string, MirrorRow>> {
  const rows = new Map<string, MirrorRow>();
  if (ids.length === 0) return rows;
  const found =
    await sql<MirrorRow>`select * from ${sql.id(schema, table)} where account = ${account} and id in (${sql.join(ids)})`.execute(db);
  for (const row of found.rows) rows.set(String(row.id), row);
  if (table === 'invoices' && rows.size > 0) {
    const items = await sql<Record<string, unknown>>`
      select * from ${sql.id(schema, 'invoice_items')}
      where account = ${account} and invoice_id in (${sql.join([...rows.keys()])})`.execute(db);
    for (const row of rows.values()) row.items = [];
    for (const item of items.rows) rows.get(String(item.invoice_id))?.items?.push(item);
  }
  return rows;
}

/** The cursor of a (resource, since) pass, made if missing. */
export async function readCursor<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  resource: string,
  sinceKey: string,
): Promise<{ next_skip: number; checked: number; finished_at: Date | string | null }> {
  const cursors = sql.id(schema, 'verify_cursors');
  await sql`insert into ${cursors} (account, resource, since_key) values (${account}, ${resource}, ${sinceKey}) on conflict do nothing`.execute(
    db,
  );
  const { rows } = await sql<{ next_skip: number; checked: number; finished_at: Date | string | null }>`
    select next_skip, checked, finished_at from ${cursors}
    where account = ${account} and resource = ${resource} and since_key = ${sinceKey}`.execute(db);
  return rows[0]!;
}

/** Starts a new pass: the cursor back to the start, the last pass's findings and listed ids forgotten. */
export async function startPass<DB>(db: Kysely<DB>, schema: string, account: string, resource: string, sinceKey: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    const where = sql`account = ${account} and resource = ${resource} and since_key = ${sinceKey}`;
    await sql`delete from ${sql.id(schema, 'verify_findings')} where ${where}`.execute(trx);
    await sql`delete from ${sql.id(schema, 'verify_seen')} where ${where}`.execute(trx);
    await sql`update ${sql.id(schema, 'verify_cursors')}
      set next_skip = 0, checked = 0, started_at = now(), finished_at = null, updated_at = now() where ${where}`.execute(trx);
  });
}

/** The findings a pass has recorded so far (a resumed run reports them with its own). */
export async function passFindings<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  resource: string,
  sinceKey: string,
): Promise<FindingRow[]> {
  const { rows } = await sql<FindingRow>`
    select id, kind, diff, repaired_at from ${sql.id(schema, 'verify_findings')}
    where account = ${account} and resource = ${resource} and since_key = ${sinceKey} order by found_at, id`.execute(db);
  return rows;
}

/**
 * Records one step of a pass in one transaction: the ids it read, what it found, and the cursor moved from
 * `expectedSkip` to `nextSkip`. Returns false when the cursor was not at `expectedSkip` (another run moved it).
 */
export async function recordStep<DB>(
  db: Kysely<DB>,
  schema: string,
  step: {
    account: string;
    resource: string;
    sinceKey: string;
    seen: readonly string[];
    findings: readonly { id: string; kind: string; diff: unknown }[];
    expectedSkip: number;
    nextSkip: number;
    checked: number;
    finished: boolean;
  },
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const { account, resource, sinceKey } = step;
    if (step.seen.length) {
      const values = step.seen.map((id) => sql`(${account}, ${resource}, ${sinceKey}, ${id})`);
      await sql`insert into ${sql.id(schema, 'verify_seen')} (account, resource, since_key, id) values ${sql.join(values)}
        on conflict do nothing`.execute(trx);
    }
    for (const finding of step.findings) {
      await sql`insert into ${sql.id(schema, 'verify_findings')} (account, resource, since_key, id, kind, diff)
        values (${account}, ${resource}, ${sinceKey}, ${finding.id}, ${finding.kind}, ${JSON.stringify(finding.diff)})
        on conflict (account, resource, since_key, id) do update set kind = excluded.kind, diff = excluded.diff, repaired_at = null, found_at = now()`.execute(
        trx,
      );
    }
    const moved = await sql<{ resource: string }>`
      update ${sql.id(schema, 'verify_cursors')}
      set next_skip = ${step.nextSkip}, checked = checked + ${step.checked},
          finished_at = ${step.finished ? sql`now()` : sql`null`}, updated_at = now()
      where account = ${account} and resource = ${resource} and since_key = ${sinceKey} and next_skip = ${step.expectedSkip} and finished_at is null
      returning resource`.execute(trx);
    return moved.rows.length > 0;
  });
}

/** The mirror's ids of `table` that the pass has not seen listed: the candidates for "extra", in id order. */
export async function unseenRows<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  table: VerifyTable,
  sinceKey: string,
): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    select m.id from ${sql.id(schema, table)} m
    where m.account = ${account}
      and not exists (select 1 from ${sql.id(schema, 'verify_seen')} s
                      where s.account = m.account and s.resource = ${table} and s.since_key = ${sinceKey} and s.id = m.id)
    order by m.id`.execute(db);
  return rows.map((row) => row.id);
}

/** One stored event as verify reads it: its body, which names the records it concerns. */
export interface StoredEventRow {
  event_id: string;
  event_type: string;
  raw_body: string;
  seq: string | number;
}

/**
 * A page of the finished events of one type of one account, by `seq`: after `after` going up, or (`newest`) before `after` going
 * down. Each page is an index range (of (status, event_type, seq), or of seq with a filter where the type is common:
 * the planner's choice), so a pass reads each event once whatever the inbox's size; with `since`, only events
 * received since.
 */
export async function finishedEventsPage<DB>(
  db: Kysely<DB>,
  inboxSchema: string,
  page: { account: string; eventType: string; after: bigint | null; newest: boolean; limit: number; since: Date | null },
): Promise<StoredEventRow[]> {
  const received = page.since ? sql`and received_at >= ${page.since.toISOString()}::timestamptz` : sql``;
  const from = page.after === null ? sql`` : page.newest ? sql`and seq < ${String(page.after)}` : sql`and seq > ${String(page.after)}`;
  const { rows } = await sql<StoredEventRow>`
    select event_id, event_type, raw_body, seq from ${sql.id(inboxSchema, 'inbox_events')}
    where status = 'done' and event_type = ${page.eventType} and account = ${page.account} ${from} ${received}
    order by seq ${page.newest ? sql`desc` : sql`asc`} limit ${page.limit}`.execute(db);
  return rows;
}

/** The ids among `ids` that have a row in the mirror's `table`. */
export async function presentRows<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  table: string,
  ids: readonly string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await sql<{ id: string }>`
    select id from ${sql.id(schema, table)} where account = ${account} and id in (${sql.join(ids)})`.execute(db);
  return new Set(rows.map((row) => row.id));
}

/** The payments the mirror holds (with `since`, those written or paid since), in id order. */
export async function mirrorPaymentIds<DB>(db: Kysely<DB>, schema: string, account: string, since: Date | null): Promise<string[]> {
  const at = since?.toISOString() ?? null;
  const written = at ? sql`and (synced_at >= ${at}::timestamptz or payment_time >= ${at}::timestamptz)` : sql``;
  const { rows } = await sql<{ id: string }>`
    select id from ${sql.id(schema, 'payments')} where account = ${account} ${written} order by id`.execute(db);
  return rows.map((row) => row.id);
}

/** The ids among `ids` the pass has already checked (a resumed run skips them). */
export async function seenAmong<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  resource: string,
  sinceKey: string,
  ids: readonly string[],
): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await sql<{ id: string }>`
    select id from ${sql.id(schema, 'verify_seen')}
    where account = ${account} and resource = ${resource} and since_key = ${sinceKey} and id in (${sql.join(ids)})`.execute(db);
  return new Set(rows.map((row) => row.id));
}

/** Marks findings repaired (re-read after the rewrite and found equal). */
export async function markRepaired<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  resource: string,
  sinceKey: string,
  ids: readonly string[],
): Promise<void> {
  if (ids.length === 0) return;
  await sql`update ${sql.id(schema, 'verify_findings')} set repaired_at = now()
    where account = ${account} and resource = ${resource} and since_key = ${sinceKey} and id in (${sql.join(ids)})`.execute(db);
}

/** Random ids of a mirror table (a sampled run). */
export async function randomRows<DB>(
  db: Kysely<DB>,
  schema: string,
  account: string,
  table: VerifyTable,
  count: number,
): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    select id from ${sql.id(schema, table)} where account = ${account} order by random() limit ${count}`.execute(db);
  return rows.map((row) => row.id);
}

/** Whether the mirror's tables exist in `schema` (a mirror that was never made has nothing to verify). */
export async function mirrorExists<DB>(db: Kysely<DB>, schema: string): Promise<boolean> {
  const { rows } = await sql<{ found: string | null }>`select to_regclass(${`"${schema}".customers`})::text as found`.execute(db);
  return rows[0]?.found != null;
}

/** The mirror's tables of the resources the API cannot read: verify finds them through the stored events. */
export const EVENT_ONLY_TABLES = ['refunds', 'disputes', 'subscriptions', 'payment_methods'] as const;
export type EventOnlyTable = (typeof EVENT_ONLY_TABLES)[number];
