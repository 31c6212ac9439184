import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';

// The gap sweeper's record (migrations/010_sweeper_runs.sql): written once per run when it ends, read newest first.

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
  startedAt: Date;
  outcome: SweeperOutcome;
  reconcile: SweeperReconcileCounts | null;
  verify: SweeperVerifyCounts | null;
  findings: SweeperFinding[];
  notes: string[];
  error: string | null;
}

/** A recorded run. */
export interface SweeperRun extends SweeperRunInput {
  id: string;
  finishedAt: Date;
}

/** The most findings one row keeps: the counts are complete, the list is for reading. */
export const MAX_RECORDED_FINDINGS = 200;

interface Row {
  id: string;
  trigger: SweeperTrigger;
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
      (trigger, started_at, outcome, reconcile_listed, reconcile_missing, reconcile_resent, reconcile_unrecovered,
       verify_sample, verify_checked, verify_drift, verify_repaired, findings, notes, error)
    values (${run.trigger}, ${run.startedAt}, ${run.outcome},
            ${run.reconcile?.listed ?? null}, ${run.reconcile?.missing ?? null}, ${run.reconcile?.resent ?? null},
            ${run.reconcile?.unrecovered ?? null},
            ${run.verify?.sample ?? null}, ${run.verify?.checked ?? null}, ${run.verify?.drift ?? null},
            ${run.verify?.repaired ?? null}, ${json(kept)}, ${json(notes)}, ${run.error})
    returning *`.execute(store.db);
  return toRun(rows[0]!);
}

/**
 * The newest recorded run, or undefined when none was; `withVerify`: the newest whose verify ran, or that the console
 * started (the console's "last verify", which may say why it could not run).
 *
 * @example
 * const last = await lastSweeperRun(store); // { outcome: 'found', reconcile: { missing: 1, … }, … }
 */
export async function lastSweeperRun(store: PayhooksDatabase, options: { withVerify?: boolean } = {}): Promise<SweeperRun | undefined> {
  const { rows } = await sql<Row>`
    select * from ${sql.id(store.schema, 'sweeper_runs')}
     where ${options.withVerify ? sql`(verify_checked is not null or trigger = 'console')` : sql`true`}
     order by finished_at desc, id desc limit 1`.execute(store.db);
  return rows[0] && toRun(rows[0]);
}
