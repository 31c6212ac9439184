import type { Logger } from 'pino';
import { runPeriodically } from '../internal/periodic.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import { reconcile, type ReconcileOptions } from './reconcile.js';

/** A periodic reconciliation run by `serve`. */
export interface PeriodicReconcile {
  /** Stops the timer and waits for a run in flight (it is aborted). */
  stop(): Promise<void>;
}

/** One account a periodic reconciliation reads the history of, through its own API client. */
export interface ReconcileAccount {
  id: string;
  api: ReconcileOptions['api'];
}

/**
 * Runs {@link reconcile} every `everyMs`, looking back `lookbackMs` each time, for each of `accounts` in turn (each
 * through its own client; without `accounts`, the one `api` for the default account): the first run one interval after
 * start, never two at once; a failed run is logged and the next interval tries again, and one account's failure does
 * not skip the others. An `everyMs` a timer cannot hold (over about 24.8 days, or under 1 ms) throws a RangeError.
 *
 * @example
 * const periodic = startPeriodicReconcile({ store, api, lookbackMs: 5 * 86_400_000 }, 3_600_000, logger);
 * await periodic.stop();
 */
export function startPeriodicReconcile(
  options: Omit<ReconcileOptions, 'since' | 'signal' | 'dryRun' | 'account'> & {
    lookbackMs: number;
    accounts?: readonly ReconcileAccount[] | undefined;
  },
  everyMs: number,
  logger: Logger,
): PeriodicReconcile {
  const { accounts, ...common } = options;
  const targets = accounts ?? [{ id: DEFAULT_ACCOUNT, api: options.api }];
  return runPeriodically(
    everyMs,
    'The reconciliation interval (everyMs)',
    async (signal) => {
      for (const { id: account, api } of targets) {
        if (signal.aborted) return;
        const log = accounts ? logger.child({ account }) : logger;
        try {
          const report = await reconcile({ ...common, api, account, since: new Date(Date.now() - options.lookbackMs), signal });
          const level = report.unrecovered.length || report.warnings.length ? 'warn' : 'info';
          log[level](
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
          if (!signal.aborted) log.error({ err }, 'reconciliation failed; the next interval tries again');
        }
      }
    },
    { stopReason: 'serve is stopping' },
  );
}
