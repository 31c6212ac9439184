import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';

// The gap sweeper's record (migrations/010_sweeper_runs.sql): written once per run when it ends, read newest first;
// one run per account, naming it (migrations/023).

/** Who started a run: serve's periodic sweeper, or an operator from the console (`POST /admin/api/verify`). */
export type SweeperTrigger = 'sweeper' | 'console';

/** clean: nothing found; found: gaps or drift, repaired or not; failed: a part threw. */
export type SweeperOutcome = 'clean' | 'found' | 'failed';

/** One thing a run found: an event the inbox never stored, or a mirror row that drifted from the service. */
export type SweeperFinding =
  | { kind: 'missing_event'; eventId: string; eventType: string; resent: boolean; reason: string | null }
  | { kind: 'drift'; resource: string; id: string; drift: string; repaired: boolean };

/** Reconciliation's part of a run. */
export interface SweeperReconcileCounts {
  /** Delivery records read. */
  listed: number;
  /** Events among them the inbox never stored. */
  missing: number;
  /** Missing events the service accepted to send again. */
  resent: number;
  /** Missing events it would not send again. */
  unrecovered: number;
}

/** The verify's part of a run. */
export interface SweeperVerifyCounts {
  /** Records per resource of the sample; null: everything. */
  sample: number | null;
  checked: number;
  /** Drifted rows found. */
  drift: number;
  /** Of those, rewritten from the API and found equal on a second read. */
  repaired: number;
}

/** What a run did, as it is recorded. */
export interface SweeperRunInput {
  trigger: SweeperTrigger;
  /** The account whose history and mirror rows the run compared, through that account's API client. */
  account: string;
  startedAt: Date;
  outcome: SweeperOutcome;
  reconcile: SweeperReconcileCounts | null;
  verify: SweeperVerifyCounts | null;
  findings: SweeperFinding[];
  notes: string[];
  error: string | null;
}

/** A recorded run. */
export interface SweeperRun extends Omit<SweeperRunInput, 'account'> {
  id: string;
  /** null: recorded before runs named their account (migrations/023), through the default account's client. */
  account: string | null;
  finishedAt: Date;
}

/** The most findings one row keeps: the counts are complete, the list is for reading. */
export const MAX_RECORDED_FINDINGS = 200;

interface Row {
  id: string;
  trigger: SweeperTrigger;
  account: string | null;
  started_at: Date;
  finished_at: Date;
  outcome: SweeperOutcome;
  reconcile_listed: number | null;
  reconcile_missing: number | null;
  reconcile_resent: number | null;
  reconcile_unrecovered: number | null;
  verify_sample: number | null;
  verify_checked: number | null;
  verify_drift: number | null;
  verify_repaired: number | null;
  findings: SweeperFinding[];
  notes: string[];
  error: string | null;
}

const json = (value: unknown) => sql`${JSON.stringify(value)}::jsonb`;

function toRun(row: Row): SweeperRun {
  return {
    id: String(row.id),
    trigger: row.trigger,
    account: row.account,
    startedAt: new Date(row.started_at),
    finishedAt: new Date(row.finished_at),
    outcome: row.outcome,
    reconcile:
      row.reconcile_listed === null
        ? null
        : {
            listed: row.reconcile_listed,
            missing: row.reconcile_missing ?? 0,
            resent: row.reconcile_resent ?? 0,
            unrecovered: row.reconcile_unrecovered ?? 0,
          },
    verify:
      row.verify_checked === null
        ? null
        : { sample: row.verify_sample, checked: row.verify_checked, drift: row.verify_drift ?? 0, repaired: row.verify_repaired ?? 0 },
    findings: row.findings,
    notes: row.notes,
    error: row.error,
  };
}

/**
 * Records a finished run (findings beyond {@link MAX_RECORDED_FINDINGS} are counted, not kept) and returns it as
 * stored.
 *
 * @example
 * await recordSweeperRun(store, { trigger: 'sweeper', startedAt, outcome: 'clean', reconcile, verify: null, findings: [], notes: [], error: null });
 */
export async function recordSweeperRun(store: PayhooksDatabase, run: SweeperRunInput): Promise<SweeperRun> {
  const kept = run.findings.slice(0, MAX_RECORDED_FINDINGS);
  const notes =
    run.findings.length > kept.length ? [...run.notes, `${run.findings.length - kept.length} more findings not listed`] : run.notes;
  const { rows } = await sql<Row>`
    insert into ${sql.id(store.schema, 'sweeper_runs')}
      (trigger, account, started_at, outcome, reconcile_listed, reconcile_missing, reconcile_resent, reconcile_unrecovered,
       verify_sample, verify_checked, verify_drift, verify_repaired, findings, notes, error)
    values (${run.trigger}, ${run.account}, ${run.startedAt}, ${run.outcome},
            ${run.reconcile?.listed ?? null}, ${run.reconcile?.missing ?? null}, ${run.reconcile?.resent ?? null},
            ${run.reconcile?.unrecovered ?? null},
            ${run.verify?.sample ?? null}, ${run.verify?.checked ?? null}, ${run.verify?.drift ?? null},
            ${run.verify?.repaired ?? null}, ${json(kept)}, ${json(notes)}, ${run.error})
    returning *`.execute(store.db);
  return toRun(rows[0]!);
}

/** Which runs {@link lastSweeperRun} and {@link lastSweeperRuns} read. */
export interface SweeperRunFilter {
  /** Only runs whose verify ran, or that the console started (the console's "last verify", which may say why not). */
  withVerify?: boolean | undefined;
}

const verifyOnly = (options: SweeperRunFilter) =>
  options.withVerify ? sql`(verify_checked is not null or trigger = 'console')` : sql`true`;

/**
 * The newest recorded run (of `account`, when given; else of any account, or of before runs named one), or undefined
 * when none was.
 *
 * @example
 * const last = await lastSweeperRun(store); // { outcome: 'found', reconcile: { missing: 1, … }, … }
 * const north = await lastSweeperRun(store, { account: 'gym-north', withVerify: true });
 */
export async function lastSweeperRun(
  store: PayhooksDatabase,
  options: SweeperRunFilter & { account?: string | undefined } = {},
): Promise<SweeperRun | undefined> {
  const { rows } = await sql<Row>`
    select * from ${sql.id(store.schema, 'sweeper_runs')}
     where ${verifyOnly(options)} and ${options.account === undefined ? sql`true` : sql`account = ${options.account}`}
     order by finished_at desc, id desc limit 1`.execute(store.db);
  return rows[0] && toRun(rows[0]);
}

/**
 * The newest recorded run of each of `accounts` that has one, newest first: one probe of migrations/023's index per
 * account, however many runs the table holds. What the health panel and the console show when several accounts are
 * swept, since the newest run alone is only the last account's.
 *
 * @example
 * await lastSweeperRuns(store, ['gym-north', 'gym-south']) // [{ account: 'gym-south', … }, { account: 'gym-north', … }]
 */
export async function lastSweeperRuns(
  store: PayhooksDatabase,
  accounts: readonly string[],
  options: SweeperRunFilter = {},
): Promise<SweeperRun[]> {
  if (accounts.length === 0) return [];
  const { rows } = await sql<Row>`
    select r.* from unnest(${[...accounts]}::text[]) as a(id)
     cross join lateral (select * from ${sql.id(store.schema, 'sweeper_runs')}
                          where account = a.id and ${verifyOnly(options)}
                          order by finished_at desc, id desc limit 1) r
     order by r.finished_at desc, r.id desc`.execute(store.db);
  return rows.map(toRun);
}
