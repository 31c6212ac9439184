import type { Logger } from 'pino';
import type { ApiClient } from '../client/index.js';
import type { RunningVerify, VerifyControl } from '../console/verify-control.js';
import type { PayhooksDatabase } from '../store/database.js';
import { lastSweeperRun, lastSweeperRuns } from '../store/sweeper-runs.js';
import { type SweepAccount, sweepAccounts, sweepGaps } from '../sync/gap-sweep.js';

/** The console's verify runs of a service, one at a time, recorded as the sweeper's are; `stop` aborts one going on. */
export interface VerifyRuns extends VerifyControl {
  stop(): Promise<void>;
}

/**
 * Verify runs started from the console (`POST /admin/api/verify`): in the background, one at a time, each account's
 * mirror rows compared through that account's own API client and recorded as a run of its own in `sweeper_runs`
 * (trigger `console`), so the last result outlives the process and shows in every process on the database. A request
 * names one account (the console's account filter) or none: then each account with an API client in turn. Without an
 * API client or a mirror, `start` says why instead. Without `accounts`, the one `api` is the default account's.
 *
 * @example
 * const verify = createVerifyRuns({ store, api, mirrorSchema: 'payhooks_mirror', logger });
 * const each = createVerifyRuns({ store, api: undefined, accounts: [{ id: 'gym-north', api: north }], mirrorSchema, logger });
 * createAdminApi({ store, token, verify });
 */
export function createVerifyRuns(options: {
  store: PayhooksDatabase;
  api: ApiClient | undefined;
  /** Every account of the service, each with its client (undefined: no API key); default the default account's `api`. */
  accounts?: readonly SweepAccount[] | undefined;
  /** undefined: this service keeps no mirror. */
  mirrorSchema: string | undefined;
  logger: Logger;
}): VerifyRuns {
  const { store, mirrorSchema, logger } = options;
  const accounts = sweepAccounts(options.accounts, options.api);
  const ids = accounts.map((account) => account.id);
  const controller = new AbortController();
  let running: { run: RunningVerify; done: Promise<void> } | undefined;

  /** The accounts a request verifies, or why it cannot start. */
  const targetsOf = (account: string | undefined): SweepAccount[] | string => {
    if (account !== undefined && !ids.includes(account)) return `this service has no account ${account} (its accounts: ${ids.join(', ')}).`;
    const asked = account === undefined ? accounts : accounts.filter((a) => a.id === account);
    const withKey = asked.filter((a) => a.api !== undefined);
    if (withKey.length === 0)
      return account === undefined || options.accounts === undefined
        ? 'verify compares the mirror with the service: it needs PAYHOOKS_API_KEY, which this service does not have.'
        : `verify compares the mirror with the service: account ${account} has no API key.`;
    return withKey;
  };

  return {
    start(request) {
      const targets = targetsOf(request.account);
      if (typeof targets === 'string') return targets;
      if (mirrorSchema === undefined)
        return 'this service keeps no mirror (its handlers run instead, and the configuration file does not turn the mirror on): nothing to verify.';
      if (running) return `a verify is already running (since ${running.run.startedAt.toISOString()}); wait for its result.`;
      const run: RunningVerify = {
        sample: request.sample,
        repair: request.repair,
        account: request.account ?? null,
        startedAt: new Date(),
      };
      const done = (async () => {
        // One account after the other: a verify reads through each account's rate budget, and one at a time is the
        // console's promise (a second start is refused while this runs).
        for (const { id: account, api } of targets) {
          if (controller.signal.aborted) return;
          try {
            const recorded = await sweepGaps({
              store,
              api,
              account,
              mirrorSchema,
              reconcile: false,
              trigger: 'console',
              sample: request.sample,
              repair: request.repair,
              signal: controller.signal,
            });
            logger.info({ account, outcome: recorded.outcome, verify: recorded.verify }, 'console: verify finished');
          } catch (err) {
            if (!controller.signal.aborted) logger.error({ err, account }, 'console: verify could not be recorded');
          }
        }
      })().finally(() => {
        running = undefined;
      });
      running = { run, done };
      logger.info({ sample: request.sample, repair: request.repair, account: run.account ?? 'each' }, 'console: verify started');
      return run;
    },
    async state(account) {
      const runs = await lastSweeperRuns(store, account === undefined ? ids : [account], { withVerify: true });
      // Before runs named their account (migrations/023), the newest of any is all there is to show.
      const last = runs[0] ?? (account === undefined ? await lastSweeperRun(store, { withVerify: true }) : undefined);
      return { running: running?.run ?? null, last: last ?? null, runs };
    },
    async stop() {
      controller.abort(new Error('serve is stopping'));
      await running?.done;
    },
  };
}
