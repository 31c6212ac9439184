import type { SweeperRun } from '../store/sweeper-runs.js';
import type { AlarmReport, SweepSummary } from './alarm-checks.js';

/**
 * What `GET /admin/api/health`, `/metrics` and the console show: every alarm's status and the gap sweeper's newest
 * runs, as the service's alarm monitor last evaluated them.
 */
export interface HealthReport extends AlarmReport {
  /** The newest recorded sweep (of serve's sweeper or a verify from the console, of any account); null: none yet. */
  sweeper: SweeperRun | null;
  /**
   * The newest run of each of the service's accounts, newest first: each account is swept as a run of its own, so
   * the newest run alone tells only of the last account swept. Empty until runs name their account (migrations/023).
   */
  sweeps: SweeperRun[];
}

/** What the mirror-drift check needs of a recorded run. */
export function sweepSummary(run: SweeperRun): SweepSummary {
  return {
    finishedAt: run.finishedAt,
    outcome: run.outcome,
    unrepairedDrift: run.verify ? run.verify.drift - run.verify.repaired : 0,
    unrecoveredEvents: run.reconcile?.unrecovered ?? 0,
    error: run.error,
  };
}

const WORST: readonly SweepSummary['outcome'][] = ['failed', 'found', 'clean'];

/**
 * What the mirror-drift check needs of the newest run of each account: what any of them left, summed; the worst
 * outcome; the newest finish; each failure's error named by its account. null without a run.
 *
 * @example
 * sweepSummaryOf([north, south]) // { unrepairedDrift: 2, outcome: 'found', error: 'gym-south: verify: …', … }
 */
export function sweepSummaryOf(runs: readonly SweeperRun[]): SweepSummary | null {
  if (runs.length === 0) return null;
  if (runs.length === 1) return sweepSummary(runs[0]!);
  const each = runs.map((run) => ({ run, summary: sweepSummary(run) }));
  const errors = each.filter(({ run }) => run.error !== null).map(({ run }) => `${run.account ?? 'before accounts'}: ${run.error}`);
  return {
    finishedAt: new Date(Math.max(...each.map(({ summary }) => summary.finishedAt.getTime()))),
    outcome: WORST.find((outcome) => each.some(({ summary }) => summary.outcome === outcome)) ?? 'clean',
    unrepairedDrift: each.reduce((sum, { summary }) => sum + summary.unrepairedDrift, 0),
    unrecoveredEvents: each.reduce((sum, { summary }) => sum + summary.unrecoveredEvents, 0),
    error: errors.length ? errors.join('; ') : null,
  };
}
