import type { Logger } from 'pino';
import type { ApiClient } from '../client/api-client.js';
import { PayhooksError } from '../errors.js';
import { runPeriodically } from '../internal/periodic.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import type { PayhooksDatabase } from '../store/database.js';
import {
  recordSweeperRun,
  type SweeperFinding,
  type SweeperRun,
  type SweeperRunInput,
  type SweeperTrigger,
} from '../store/sweeper-runs.js';
import { reconcile } from './reconcile.js';
import { NoMirrorError, type VerifyReport, verifyMirror } from './verify/verify-mirror.js';

// The gap sweeper proves, on a schedule, that nothing fell through: reconciliation finds the events the sender
// gave up on that the inbox never stored (and asks for them again), and a sampled verify compares the newest and
// some random mirror rows with the service (and repairs them). Each run is recorded (migrations/010), so that
// /metrics, /admin/api/health and the console show its last findings, whichever process ran it. A run is of one
// account, through that account's API client; serve sweeps each account in turn, each run recorded with its account
// (migrations/023).

/** The defaults of {@link sweepGaps}. */
export const GAP_SWEEP_DEFAULTS = {
  /** How far back reconciliation looks: longer than the sender's retry horizon of 4 days 6½ hours. */
  lookbackMs: 5 * 24 * 60 * 60 * 1000,
  /** Records per resource the verify samples: the newest ones listed and as many random mirror rows. */
  sample: 20,
  /** Rewrite drifted rows from the API. */
  repair: true,
} as const;

/** Options of {@link sweepGaps}. */
export interface GapSweepOptions {
  store: PayhooksDatabase;
  /** The API client (on the shared rate budget); without one, nothing can be compared and the run records why. */
  api: Pick<ApiClient, 'webhookEvents' | 'customers' | 'invoices' | 'payments'> | undefined;
  /** The mirror's schema; undefined when this service keeps no mirror (the verify is skipped). */
  mirrorSchema: string | undefined;
  /** The account whose history and mirror rows are swept, `api` being its client. Default `default`. */
  account?: string | undefined;
  /** The webhook endpoint whose deliveries count (reconcile.endpointId). */
  endpointId?: string | undefined;
  /** Default {@link GAP_SWEEP_DEFAULTS.lookbackMs}. */
  lookbackMs?: number | undefined;
  /** Default {@link GAP_SWEEP_DEFAULTS.sample}; null: verify everything (resumable, as `payhooks verify`). */
  sample?: number | null | undefined;
  /** Default {@link GAP_SWEEP_DEFAULTS.repair}. */
  repair?: boolean | undefined;
  /** Whether reconciliation runs (a verify from the console runs alone). Default true. */
  reconcile?: boolean | undefined;
  /** Default `sweeper`. */
  trigger?: SweeperTrigger | undefined;
  signal?: AbortSignal | undefined;
}

/** The findings of a verify report, as recorded. */
function driftFindings(report: VerifyReport): SweeperFinding[] {
  return report.drift.map((drift) => ({
    kind: 'drift',
    resource: drift.resource,
    id: drift.id,
    drift: drift.kind,
    repaired: drift.repaired,
  }));
}

/**
 * Runs one sweep: reconciliation over the lookback (missing events re-sent), then a verify of the mirror (sampled
 * by default, repairing), and records the run in `sweeper_runs`, also when a part fails (outcome `failed`, with the
 * error). Returns the recorded run. A part that cannot run (no API key, no mirror) is skipped with a note.
 *
 * @example
 * const run = await sweepGaps({ store, api, mirrorSchema: 'payhooks_mirror' });
 * run.reconcile?.missing; run.verify?.drift; run.outcome; // 'clean' | 'found' | 'failed'
 */
export async function sweepGaps(options: GapSweepOptions): Promise<SweeperRun> {
  const startedAt = new Date();
  const run: SweeperRunInput = {
    trigger: options.trigger ?? 'sweeper',
    account: options.account ?? DEFAULT_ACCOUNT,
    startedAt,
    outcome: 'clean',
    reconcile: null,
    verify: null,
    findings: [],
    notes: [],
    error: null,
  };
  const { api, store, signal } = options;
  const errors: string[] = [];
  if (!api) run.notes.push('No API key (PAYHOOKS_API_KEY): nothing to compare with, reconciliation and verify skipped.');
  if (api && options.reconcile !== false) {
    try {
      const report = await reconcile({
        store,
        api,
        account: options.account,
        endpointId: options.endpointId,
        since: new Date(startedAt.getTime() - (options.lookbackMs ?? GAP_SWEEP_DEFAULTS.lookbackMs)),
        signal,
      });
      const unrecovered = new Map(report.unrecovered.map((u) => [u.eventId, u.reason]));
      run.reconcile = {
        listed: report.listed,
        missing: report.missing.length,
        resent: report.resent.length,
        unrecovered: unrecovered.size,
      };
      for (const missing of report.missing) {
        run.findings.push({
          kind: 'missing_event',
          eventId: missing.eventId,
          eventType: missing.eventType,
          resent: report.resent.includes(missing.eventId),
          reason: unrecovered.get(missing.eventId) ?? null,
        });
      }
      if (report.inFlight.length)
        run.notes.push(`${report.inFlight.length} event(s) not stored yet were being delivered: not counted missing.`);
      run.notes.push(...report.warnings);
    } catch (err) {
      errors.push(`reconcile: ${PayhooksError.describe(err)}`);
    }
  }
  if (api && options.mirrorSchema === undefined) run.notes.push('This service keeps no mirror: verify skipped.');
  if (api && options.mirrorSchema !== undefined && !signal?.aborted) {
    const sample = options.sample === undefined ? GAP_SWEEP_DEFAULTS.sample : options.sample;
    try {
      const report = await verifyMirror({
        store,
        api,
        account: options.account,
        mirrorSchema: options.mirrorSchema,
        sample: sample ?? undefined,
        repair: options.repair ?? GAP_SWEEP_DEFAULTS.repair,
        signal,
      });
      const checked = report.resources.reduce((sum, resource) => sum + resource.checked, 0);
      const repaired = report.drift.filter((drift) => drift.repaired).length;
      run.verify = { sample: sample ?? null, checked, drift: report.drift.length, repaired };
      run.findings.push(...driftFindings(report));
      if (report.stopped) run.notes.push('The verify was stopped before every resource was checked.');
    } catch (err) {
      // No mirror yet (serve has not written a row, or the mirror lives elsewhere) is a note, not a failure.
      if (err instanceof NoMirrorError) run.notes.push(`No mirror in schema ${err.mirrorSchema} yet: verify skipped.`);
      else errors.push(`verify: ${PayhooksError.describe(err)}`);
    }
  }
  if (errors.length) {
    run.outcome = 'failed';
    run.error = errors.join('; ');
  } else if (run.findings.length > 0) run.outcome = 'found';
  return recordSweeperRun(store, run);
}

/** A periodic gap sweeper run by `serve`. */
export interface GapSweeper {
  /** Stops the timer and waits for a run in flight (it is aborted, and recorded as far as it got). */
  stop(): Promise<void>;
}

/** One account a sweep compares: its id and its own API client (undefined: it has no API key). */
export interface SweepAccount {
  id: string;
  api: GapSweepOptions['api'];
}

/** The accounts to sweep: those given, or (a single-account setup) the default account with `api`. */
export function sweepAccounts(accounts: readonly SweepAccount[] | undefined, api: GapSweepOptions['api']): readonly SweepAccount[] {
  return accounts ?? [{ id: DEFAULT_ACCOUNT, api }];
}

/**
 * Runs {@link sweepGaps} every `everyMs` for each of `accounts` in turn, each through its own client and recorded as
 * its own run (without `accounts`, the one `api` for the default account): the first one interval after start, never
 * two at once; a run that throws (the database away while recording) is logged, the other accounts still run, and the
 * next interval tries again.
 *
 * @example
 * const sweeper = startGapSweeper({ store, api, mirrorSchema }, 3_600_000, logger);
 * const each = startGapSweeper({ store, api: undefined, mirrorSchema, accounts: [{ id: 'gym-north', api: north }] }, 3_600_000, logger);
 * await sweeper.stop();
 */
export function startGapSweeper(
  options: Omit<GapSweepOptions, 'signal' | 'trigger' | 'account'> & { accounts?: readonly SweepAccount[] | undefined },
  everyMs: number,
  logger: Logger,
): GapSweeper {
  const { accounts, ...common } = options;
  const targets = sweepAccounts(accounts, options.api);
  return runPeriodically(
    everyMs,
    'The gap sweeper interval (sweeper.everyMs)',
    async (signal) => {
      for (const { id: account, api } of targets) {
        if (signal.aborted) return;
        const log = accounts ? logger.child({ account }) : logger;
        try {
          const run = await sweepGaps({ ...common, api, account, signal });
          const level = run.outcome === 'clean' ? 'info' : 'warn';
          log[level](
            {
              outcome: run.outcome,
              reconcile: run.reconcile,
              verify: run.verify,
              notes: run.notes,
              ...(run.error ? { error: run.error } : {}),
            },
            'gap sweep finished',
          );
        } catch (err) {
          if (!signal.aborted) log.error({ err }, 'gap sweep could not be recorded; the next interval tries again');
        }
      }
    },
    { stopReason: 'serve is stopping' },
  );
}
