import type { SweeperRun } from '../store/sweeper-runs.js';
import type { AlarmReport, SweepSummary } from './alarm-checks.js';

/**
 * What `GET /admin/api/health`, `/metrics` and the console show: every alarm's status and the gap sweeper's newest
 * run, as the service's alarm monitor last evaluated them.
 */
export interface HealthReport extends AlarmReport {
  /** The newest recorded sweep (of serve's sweeper or a verify from the console); null: none yet. */
  sweeper: SweeperRun | null;
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
