import type { Logger } from 'pino';
import type { ApiClient } from '../client/index.js';
import type { RunningVerify, VerifyControl } from '../console/verify-control.js';
import type { PayhooksDatabase } from '../store/database.js';
import { lastSweeperRun } from '../store/sweeper-runs.js';
import { sweepGaps } from '../sync/gap-sweep.js';

/** The console's verify runs of a service, one at a time, recorded as the sweeper's are; `stop` aborts one going on. */
export interface VerifyRuns extends VerifyControl {
  stop(): Promise<void>;
}

/**
 * Verify runs started from the console (`POST /admin/api/verify`): in the background, one at a time, each
 * recorded in `sweeper_runs` with trigger `console`, so the last result outlives the process and shows in every
 * process on the database. Without an API client or a mirror, `start` says why instead.
 *
 * @example
 * const verify = createVerifyRuns({ store, api, mirrorSchema: 'payhooks_mirror', logger });
 * createAdminApi({ store, token, verify });
 */
export function createVerifyRuns(options: {
  store: PayhooksDatabase;
  api: ApiClient | undefined;
  /** undefined: this service keeps no mirror. */
  mirrorSchema: string | undefined;
  logger: Logger;
}): VerifyRuns {
  const { store, api, mirrorSchema, logger } = options;
  const controller = new AbortController();
  let running: { run: RunningVerify; done: Promise<void> } | undefined;
  return {
    start(request) {
      if (!api) return 'verify compares the mirror with the service: it needs PAYHOOKS_API_KEY, which this service does not have.';
      if (mirrorSchema === undefined)
        return 'this service keeps no mirror (its handlers run instead, and the configuration file does not turn the mirror on): nothing to verify.';
      if (running) return `a verify is already running (since ${running.run.startedAt.toISOString()}); wait for its result.`;
      const run: RunningVerify = { ...request, startedAt: new Date() };
      const done = sweepGaps({
        store,
        api,
        mirrorSchema,
        reconcile: false,
        trigger: 'console',
        sample: request.sample,
        repair: request.repair,
        signal: controller.signal,
      })
        .then((recorded) => logger.info({ outcome: recorded.outcome, verify: recorded.verify }, 'console: verify finished'))
        .catch((err: unknown) => {
          if (!controller.signal.aborted) logger.error({ err }, 'console: verify could not be recorded');
        })
        .finally(() => {
          running = undefined;
        });
      running = { run, done };
      logger.info({ sample: request.sample, repair: request.repair }, 'console: verify started');
      return run;
    },
    async state() {
      return { running: running?.run ?? null, last: (await lastSweeperRun(store, { withVerify: true })) ?? null };
    },
    async stop() {
      controller.abort(new Error('serve is stopping'));
      await running?.done;
    },
  };
}
