import type { Logger } from 'pino';
import { runPeriodically } from '../internal/periodic.js';
import { reconcile, type ReconcileOptions } from './reconcile.js';

/** A periodic reconciliation run by `serve`. */
export interface PeriodicReconcile {
  /** Stops the timer and waits for a run in flight (it is aborted). */
  stop(): Promise<void>;
}

/**
 * Runs {@link reconcile} every `everyMs`, looking back `lookbackMs` each time: the first run one interval after
 * start, never two at once; a failed run is logged and the next interval tries again. An `everyMs` a timer cannot
 * hold (over about 24.8 days, or under 1 ms) throws a RangeError.
 *
 * @example
 * const periodic = startPeriodicReconcile({ store, api, lookbackMs: 5 * 86_400_000 }, 3_600_000, logger);
 * await periodic.stop();
 */
export function startPeriodicReconcile(
  options: Omit<ReconcileOptions, 'since' | 'signal' | 'dryRun'> & { lookbackMs: number },
  everyMs: number,
  logger: Logger,
): PeriodicReconcile {
  return runPeriodically(
    everyMs,
    'The reconciliation interval (everyMs)',
    async (signal) => {
      try {
        const report = await reconcile({ ...options, since: new Date(Date.now() - options.lookbackMs), signal });
        const level = report.unrecovered.length || report.warnings.length ? 'warn' : 'info';
        logger[level](
          {
            listed: report.listed,
            missing: report.missing.length,
            inFlight: report.inFlight.length,
            resent: report.resent.length,
            unrecovered: report.unrecovered,
            ...(report.warnings.length ? { warnings: report.warnings } : {}),
          },
          'reconciliation finished',
        );
      } catch (err) {
        if (!signal.aborted) logger.error({ err }, 'reconciliation failed; the next interval tries again');
      }
    },
    { stopReason: 'serve is stopping' },
  );
}
