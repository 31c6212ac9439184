import { sql, type Transaction } from 'kysely';
import { sleep } from '../internal/sleep.js';
import type { PayhooksDatabase } from './database.js';
import type { PayhooksTables } from './schema.js';

/**
 * The tables of the history, partitioned alike by the event's receipt time (migrations/009 and 011): bodies and
 * outcomes, which handlers settled each event, their failed runs, and their effect steps. A partition of one has a twin of the same range in each
 * other; they are created and dropped together.
 */
export const HISTORY_TABLES = ['inbox_events', 'handler_runs', 'handler_attempts', 'effect_steps'] as const;

/** How wide each partition is: a UTC day, a week from Monday 00:00 UTC, or any duration of at least a second. */
export type PartitionSpan = 'day' | 'week' | { ms: number };

/** Defaults of the history's partitions and retention (docs/storage.md quotes them). */
export const HISTORY_DEFAULTS = {
  /** A partition per UTC day. */
  span: 'day',
  /** Partitions kept ready beyond the current one, so that a receiver never meets a receipt time with none. */
  ahead: 3,
} as const satisfies { span: PartitionSpan; ahead: number };

const DAY_MS = 86_400_000;
// 1970-01-05 was a Monday: weeks are counted from it.
const WEEK_ORIGIN_MS = 4 * DAY_MS;

/** One range of the history: the `inbox_events` partition that names it, and its bounds. */
export interface HistoryPartition {
  /** The `inbox_events` partition's table name, e.g. `inbox_events_p20261125t000000` (or `inbox_events_legacy`). */
  name: string;
  /** Null for the partition that holds everything before its upper bound (the history migration 009 attached). */
  from: Date | null;
  to: Date;
}

function spanMs(span: PartitionSpan): number {
  return span === 'day' ? DAY_MS : span === 'week' ? 7 * DAY_MS : span.ms;
}

/** The start of the partition of `span` that holds `at`. */
function partitionStart(at: number, span: PartitionSpan): number {
  const size = spanMs(span);
  const origin = span === 'week' ? WEEK_ORIGIN_MS : 0;
  return Math.floor((at - origin) / size) * size + origin;
}

function partitionSuffix(from: Date): string {
  return `p${from.toISOString().slice(0, 19).replace(/[-:]/g, '').toLowerCase()}`;
}

/**
 * The history's partitions, oldest first, read from the catalog (the bounds Postgres holds, not a list of our own).
 *
 * @example
 * const partitions = await listHistoryPartitions(store); // [{ name: 'inbox_events_legacy', from: null, to: … }, …]
 */
export async function listHistoryPartitions(store: PayhooksDatabase): Promise<HistoryPartition[]> {
  return readPartitions(store.db, store.schema);
}

type Queryable = PayhooksDatabase['db'] | Transaction<PayhooksTables>;

async function readPartitions(db: Queryable, schema: string): Promise<HistoryPartition[]> {
  const { rows } = await sql<{ name: string; bound: string }>`
    select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
      from pg_inherits i
      join pg_class c on c.oid = i.inhrelid
      join pg_class p on p.oid = i.inhparent
      join pg_namespace n on n.oid = p.relnamespace
     where n.nspname = ${schema} and p.relname = 'inbox_events' and c.relkind = 'r'`.execute(db);
  return rows
    .map((row) => {
      // FOR VALUES FROM ('…') TO ('…'), or FROM (MINVALUE); the timestamps carry their offset, so they read back exact.
      const [, from, to] = /FROM \((?:'([^']+)'|MINVALUE)\) TO \('([^']+)'\)/.exec(row.bound) ?? [];
      if (!to) throw new Error(`The history partition ${row.name} has bounds payhooks did not make: ${row.bound}`);
      return { name: row.name, from: from ? new Date(from) : null, to: new Date(to) };
    })
    .sort((a, b) => a.to.getTime() - b.to.getTime());
}

/** Options of {@link ensureHistoryPartitions}. */
export interface EnsurePartitionsOptions {
  /** Default `day`. */
  span?: PartitionSpan | undefined;
  /** Partitions ready beyond the one holding `now`. Default 3. */
  ahead?: number | undefined;
  /** Default: the database's clock. */
  now?: Date | undefined;
  /**
   * Also reach back to the partition holding this instant, before the oldest one (for history stored with an earlier
   * receipt time, such as tests and imports); nothing is made before a partition that starts at the beginning of time.
   */
  from?: Date | undefined;
  /**
   * How long to try for the partitioned tables' locks (in short waits, as a drop does) before giving up with an error.
   * Default 10,000 ms. Nothing the receiver or the worker runs holds a lock that these wait for: only a drop, a
   * migration or an operator's maintenance of the history does.
   */
  lockTimeoutMs?: number | undefined;
}

/**
 * Creates the partitions the history will need: from the end of the newest one (or the one holding `now`, when none
 * reaches it) until `ahead` partitions past `now`, in each history table. Runs under an advisory lock, so workers
 * started together create each partition once. Resolves to the partitions created (usually none); rejects when the
 * partitioned tables' locks were not had within `lockTimeoutMs`.
 *
 * Each partition is made as a table of its own and then attached, which holds the partitioned tables in share update
 * exclusive mode: receipt, claims and outcomes go on beside it and never wait for it, nor it for them.
 * `create table … partition of` held each in access exclusive mode, one after the other, so a statement writing two
 * of them in another order (the worker's outcomes) could hold one while waiting for the other, and deadlock with it.
 *
 * @example
 * await ensureHistoryPartitions(store, { span: 'day', ahead: 3 }); // the worker does this at start and then periodically
 */
export async function ensureHistoryPartitions(store: PayhooksDatabase, options: EnsurePartitionsOptions = {}): Promise<HistoryPartition[]> {
  const span = options.span ?? HISTORY_DEFAULTS.span;
  const size = spanMs(span);
  if (!Number.isSafeInteger(size) || size < 1000)
    throw new RangeError(`A history partition must span at least one second, not ${size} ms.`);
  const ahead = options.ahead ?? HISTORY_DEFAULTS.ahead;
  const lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
  const wanted = async (db: Queryable): Promise<{ from: Date; to: Date }[]> => {
    const now = options.now ?? (await sql<{ now: Date }>`select now() as now`.execute(db)).rows[0]!.now;
    return missingRanges(await readPartitions(db, store.schema), { now, span, ahead, from: options.from });
  };
  // Most calls (every worker's periodic upkeep) find nothing to make: they take no lock at all.
  if ((await wanted(store.db)).length === 0) return [];
  let created: HistoryPartition[] = [];
  const locked = await withHistoryLocked(store, CREATE_LOCK, lockTimeoutMs, async (trx) => {
    created = [];
    // Again under the lock: another process may have made them meanwhile.
    for (const range of await wanted(trx)) {
      const suffix = partitionSuffix(range.from);
      const bounds = sql`for values from (${sql.lit(range.from.toISOString())}) to (${sql.lit(range.to.toISOString())})`;
      for (const table of HISTORY_TABLES) {
        const parent = sql.id(store.schema, table);
        const partition = sql.id(store.schema, `${table}_${suffix}`);
        // What attaching requires of the table (the parent's columns, NOT NULLs and checks), and what a partition made
        // by `partition of` would take from the parent besides (defaults, lz4 bodies); attaching builds the indexes.
        await sql`create table ${partition} (like ${parent} including defaults including constraints
                    including compression including storage)`.execute(trx);
        await sql`alter table ${parent} attach partition ${partition} ${bounds}`.execute(trx);
      }
      created.push({ name: `inbox_events_${suffix}`, ...range });
    }
  });
  if (!locked)
    throw new Error(
      `The history's partitions could not be made: its tables were held by another statement for ${lockTimeoutMs} ms (a migration, or an operator's maintenance of the history?).`,
    );
  return created.sort((a, b) => a.to.getTime() - b.to.getTime());
}

/**
 * The ranges of the partitions to make, oldest first: before the oldest one back to `from` (an import of old events),
 * and after the newest one until `ahead` partitions past `now`.
 */
function missingRanges(
  existing: readonly HistoryPartition[],
  { now, span, ahead, from: since }: { now: Date; span: PartitionSpan; ahead: number; from: Date | undefined },
): { from: Date; to: Date }[] {
  const size = spanMs(span);
  const ranges: { from: Date; to: Date }[] = [];
  const oldest = existing[0];
  if (since && oldest?.from && since < oldest.from) {
    const before: { from: Date; to: Date }[] = [];
    for (let to = oldest.from.getTime(); to > since.getTime(); ) {
      const from = Math.min(partitionStart(to - 1, span), to - 1000);
      before.push({ from: new Date(from), to: new Date(to) });
      to = from;
    }
    ranges.push(...before.reverse());
  }
  const until = partitionStart(now.getTime(), span) + (ahead + 1) * size;
  let from = existing.at(-1)?.to.getTime() ?? partitionStart(Math.min(now.getTime(), since?.getTime() ?? Infinity), span);
  while (from < until) {
    // The first one after a partition of another span (or the legacy one) ends on this span's grid.
    const to = Math.max(partitionStart(from, span) + size, from + 1000);
    ranges.push({ from: new Date(from), to: new Date(to) });
    from = to;
  }
  return ranges;
}

/** A partition {@link dropHistoryPartitions} left in place, and why. */
export interface KeptPartition extends HistoryPartition {
  /** Events in it that are not finished (`pending`, `processing`, `dead`, `invalid`, `needs-review`), by status. */
  unresolved: Record<string, number>;
  /** The finished events dropped from it: the partition was rebuilt with its unfinished events alone (0: none to drop). */
  compacted: number;
}

/** What {@link dropHistoryPartitions} did (or, with `dryRun`, would do). */
export interface PartitionDropReport {
  /** The partitions dropped, with the events each held. */
  dropped: (HistoryPartition & { events: number })[];
  /** Partitions old enough but kept for the events in them that are not finished, the finished ones dropped. */
  kept: KeptPartition[];
  /** Partitions whose locks were not had within `lockTimeoutMs` (a long statement held the history): left for the next run. */
  busy: HistoryPartition[];
}

/** Options of {@link dropHistoryPartitions}. */
export interface DropPartitionsOptions {
  /** Partitions that end at or before this instant are dropped. */
  before: Date;
  /** Count what would go, drop nothing. */
  dryRun?: boolean | undefined;
  /**
   * How long a drop may try for the locks it needs before the partition is left for the next run. Default 1,000 ms.
   * It tries in short waits (under the server's `deadlock_timeout`), stepping back in between: while it waits, new
   * statements on the history queue behind it, and a transaction that already holds one of the history's tables and
   * wants another must never be the one that deadlocks and fails.
   */
  lockTimeoutMs?: number | undefined;
}

/**
 * Retention: drops each partition of the history (in every history table) that ends at or before `before`. A
 * partition holding events that are not finished (pending, processing, dead, invalid, needs-review, or still queued)
 * is not dropped: it is rebuilt with those events alone (their rows of every history table copied into new tables that
 * take the partition's place), so the finished ones go and the unfinished ones stay where they were, until an operator
 * resolves them; such a partition is reported as kept, with what keeps it. Deduplication is not touched: it lives in
 * the ledger, so a dropped event's eventId is still answered as a duplicate.
 *
 * Dropping a partition returns its disk at once and leaves no dead tuples; a rebuild costs the unfinished rows' copy.
 * Each is one transaction that takes the partitioned tables' locks first and checks again under them, so a replay that
 * re-queues an event of a partition either happens before (and the event stays) or finds the event gone.
 *
 * @example
 * const report = await dropHistoryPartitions(store, { before: new Date(Date.now() - 30 * 86_400_000) });
 */
export async function dropHistoryPartitions(store: PayhooksDatabase, options: DropPartitionsOptions): Promise<PartitionDropReport> {
  const report: PartitionDropReport = { dropped: [], kept: [], busy: [] };
  const lockTimeoutMs = options.lockTimeoutMs ?? 1000;
  for (const partition of await listHistoryPartitions(store)) {
    if (partition.to.getTime() > options.before.getTime()) break;
    const twins = HISTORY_TABLES.map((table) => sql.id(store.schema, twinName(partition, table)));
    const count = async (db: Queryable) =>
      (await sql<{ count: number }>`select count(*)::int as count from ${twins[0]!}`.execute(db)).rows[0]!.count;
    // Looked at first without a lock, so that a partition with nothing to drop costs the service nothing.
    const seen = await unresolvedIn(store.db, store.schema, partition);
    const events = await count(store.db);
    const unfinished = unfinishedCount(seen);
    if (Object.keys(seen).length > 0 && (options.dryRun || events <= unfinished)) {
      report.kept.push({ ...partition, unresolved: seen, compacted: options.dryRun ? Math.max(events - unfinished, 0) : 0 });
      continue;
    }
    if (options.dryRun) {
      report.dropped.push({ ...partition, events });
      continue;
    }
    const locked = await withHistoryLocked(store, DROP_LOCK, lockTimeoutMs, async (trx) => {
      const unresolved = await unresolvedIn(trx, store.schema, partition);
      const total = await count(trx);
      if (Object.keys(unresolved).length === 0) {
        await sql`drop table ${sql.join(twins)}`.execute(trx);
        report.dropped.push({ ...partition, events: total });
        return;
      }
      const kept = await keepOnlyUnfinished(trx, store.schema, partition);
      report.kept.push({ ...partition, unresolved, compacted: total - kept });
    });
    // The locks were not had in time: the other partitions go on, this one is for the next run.
    if (!locked) report.busy.push(partition);
  }
  return report;
}

/** How {@link withHistoryLocked} holds the history's partitioned tables. */
interface HistoryLock {
  mode: 'access exclusive' | 'share update exclusive';
  /** The partitioned tables alone (`lock table only`), not each partition as well. */
  only: boolean;
  /** An advisory lock waited for first, with no time limit: it serializes those who take it, holding nothing else. */
  advisory?: (schema: string) => string;
}

/**
 * A drop: every partition, so that nothing can slip in between its check and the drop, and nothing reads a partition
 * being dropped.
 */
const DROP_LOCK: HistoryLock = { mode: 'access exclusive', only: false };

/**
 * A creation: the partitioned tables alone, in the mode `attach partition` takes them in, which the receiver's,
 * the worker's and readers' statements (row exclusive and below) do not conflict with; two creations do, and a drop.
 * The advisory lock lets the creations of workers started together wait for one another rather than use up their
 * budgets, and the second find the partitions made.
 */
const CREATE_LOCK: HistoryLock = { mode: 'share update exclusive', only: true, advisory: (schema) => `payhooks:partitions:${schema}` };

/**
 * Runs `work` in a transaction that holds the history's partitioned tables as `lock` says, taken in one statement and
 * always in {@link HISTORY_TABLES}' order, before `work` does anything. Resolves to false when the locks were not had
 * within `budgetMs`.
 *
 * Any transaction that holds one history table and then wants another in a mode that conflicts (a replay's, a query
 * joining two of them, for a drop; a migration's or an operator's maintenance, for a creation) could deadlock with this
 * one. Each try therefore waits less than the server's `deadlock_timeout`, then steps back, releasing what it took, and
 * tries again: the other side's wait ends before its deadlock check runs, so the drop or the creation is always the one
 * that yields and nothing else fails.
 */
async function withHistoryLocked(
  store: PayhooksDatabase,
  lock: HistoryLock,
  budgetMs: number,
  work: (trx: Transaction<PayhooksTables>) => Promise<void>,
): Promise<boolean> {
  const parents = HISTORY_TABLES.map((table) => (lock.only ? sql`only ${sql.id(store.schema, table)}` : sql.id(store.schema, table)));
  const { rows } = await sql<{ ms: string }>`
    select extract(epoch from current_setting('deadlock_timeout')::interval) * 1000 as ms`.execute(store.db);
  const tryMs = Math.max(5, Math.min(200, Math.floor(Number(rows[0]!.ms) / 3)));
  const deadline = Date.now() + budgetMs;
  for (;;) {
    try {
      await store.db.transaction().execute(async (trx) => {
        if (lock.advisory) await sql`select pg_advisory_xact_lock(hashtext(${lock.advisory(store.schema)}))`.execute(trx);
        // Measured after the advisory wait, which may have been long.
        const waitMs = Math.max(1, Math.min(tryMs, deadline - Date.now()));
        await sql`select set_config('lock_timeout', ${`${waitMs}ms`}, true)`.execute(trx);
        await sql`lock table ${sql.join(parents)} in ${sql.raw(lock.mode)} mode`.execute(trx);
        await work(trx);
      });
      return true;
    } catch (err) {
      // lock_not_available: this try's wait ran out.
      if ((err as { code?: unknown }).code !== '55P03') throw err;
      if (Date.now() >= deadline) return false;
      await sleep(Math.min(tryMs, deadline - Date.now()));
    }
  }
}

function twinName(partition: HistoryPartition, table: string): string {
  return partition.name.replace(/^inbox_events/, table);
}

/**
 * Rebuilds a partition with its unfinished events alone: their rows of each history table go into a new table,
 * which replaces the partition (detached and dropped) under the same name and bounds. Runs under the partitioned
 * tables' locks. Resolves to the events kept.
 */
async function keepOnlyUnfinished(trx: Queryable, schema: string, partition: HistoryPartition): Promise<number> {
  const inbox = sql.id(schema, partition.name);
  const queue = sql.id(schema, 'inbox_queue');
  const range = partition.from
    ? sql`received_at >= ${partition.from} and received_at < ${partition.to}`
    : sql`received_at < ${partition.to}`;
  const bounds = sql.raw(
    `for values from (${partition.from ? `'${partition.from.toISOString()}'` : 'minvalue'}) to ('${partition.to.toISOString()}')`,
  );
  let kept = 0;
  for (const table of HISTORY_TABLES) {
    const old = sql.id(schema, twinName(partition, table));
    const fresh = sql.id(schema, `${twinName(partition, table)}_kept`);
    // With its columns' compression: a partition's own setting, which a table attached later does not take from the parent.
    await sql`create table ${fresh} (like ${old} including defaults including constraints including compression)`.execute(trx);
    const copied = await sql`
      insert into ${fresh} select t.* from ${old} t
       where (t.event_id, t.account) in (select e.event_id, e.account from ${inbox} e where e.status not in ('done', 'ignored')
                                         union select q.event_id, q.account from ${queue} q where ${range})`.execute(trx);
    if (table === 'inbox_events') kept = Number(copied.numAffectedRows ?? 0n);
    await sql`alter table ${sql.id(schema, table)} detach partition ${old}`.execute(trx);
    await sql`drop table ${old}`.execute(trx);
    await sql`alter table ${fresh} rename to ${sql.id(twinName(partition, table))}`.execute(trx);
    await sql`alter table ${sql.id(schema, table)} attach partition ${sql.id(schema, twinName(partition, table))} ${bounds}`.execute(trx);
  }
  return kept;
}

/**
 * How many events `unresolved` (from a drop report) keeps: every status counted once; `queued` events are `pending` in
 * the partition too, so they are not counted again.
 *
 * @example
 * unfinishedCount({ pending: 2, dead: 1, queued: 2 }) // 3
 */
export function unfinishedCount(unresolved: Record<string, number>): number {
  return Object.entries(unresolved).reduce((sum, [status, n]) => (status === 'queued' ? sum : sum + n), 0);
}

/** The events of a partition that keep it: by status, those not finished, and `queued` for those still in the queue. */
async function unresolvedIn(db: Queryable, schema: string, partition: HistoryPartition): Promise<Record<string, number>> {
  const { rows } = await sql<{ status: string; count: number }>`
    select status, count(*)::int as count from ${sql.id(schema, partition.name)} where status not in ('done', 'ignored') group by status
    union all
    select 'queued', count(*)::int from ${sql.id(schema, 'inbox_queue')}
     where received_at < ${partition.to} ${partition.from ? sql`and received_at >= ${partition.from}` : sql``}
    having count(*) > 0`.execute(db);
  return Object.fromEntries(rows.map((row) => [row.status, row.count]));
}

/**
 * Deletes ledger rows first received before `before`, at most `limit` per call; resolves to how many.
 * Only for a ledger retention shorter than forever: an eventId forgotten here is accepted as new if it is delivered
 * again, so callers keep `before` older than the sender's retry horizon (see assertLedgerRetention).
 *
 * @example
 * while ((await forgetLedgerRows(store, cutoff, 10_000)) > 0);
 */
export async function forgetLedgerRows(store: PayhooksDatabase, before: Date, limit: number): Promise<number> {
  const ledger = sql.id(store.schema, 'event_ledger');
  const result = await sql`
    delete from ${ledger} where (event_id, account) in (
      select l.event_id, l.account from ${ledger} l
       where l.first_received_at < ${before}
         -- An event whose history is still kept (a partition kept for its unfinished events) keeps its ledger row: the
         -- history has no unique eventId of its own, so the ledger is what stops a second copy.
         and not exists (select 1 from ${sql.id(store.schema, 'inbox_events')} e
                          where e.event_id = l.event_id and e.account = l.account and e.received_at = l.first_received_at)
       limit ${limit})`.execute(store.db);
  return Number(result.numAffectedRows ?? 0n);
}
