import type { Logger } from 'pino';
import { countEventsNeedingAttention } from '../store/attention-counts.js';
import type { PayhooksDatabase } from '../store/database.js';
import type { ServiceConfig } from './service-config.js';

/** One line at start that says what this worker does with events, and with which of the worker's settings. */
export function reportWhatRuns(
  logger: Logger,
  config: ServiceConfig,
  runs: { userHandlers: number; mirror: boolean; api: boolean; sinks: string[] },
): void {
  const { concurrency, maxAttempts, handlerTimeoutMs, backoff } = config.worker;
  const parts = [
    runs.userHandlers ? `${runs.userHandlers} handler${runs.userHandlers === 1 ? '' : 's'} of --handlers` : null,
    runs.mirror
      ? `the Postgres mirror in schema ${config.mirror.schema} (${runs.api ? 'current state read from the API' : "events' own snapshots"})`
      : null,
    ...runs.sinks,
  ].filter((part) => part !== null);
  logger.info(
    {
      config: config.configFile,
      handlers: runs.userHandlers,
      mirror: runs.mirror ? config.mirror.schema : false,
      sinks: runs.sinks.length,
      reconcileEvery: config.reconcile.every ?? null,
      concurrency,
      maxAttempts,
      handlerTimeoutMs,
      backoff,
    },
    parts.length
      ? `running: ${parts.join(', ')}; ${concurrency} at once, up to ${maxAttempts} attempts each`
      : 'running: nothing (no handlers, mirror off, no sinks)',
  );
}

/** Says at start how many stored events wait for a person, and how to look at them: never a silent backlog. */
export async function reportEventsNeedingAttention(store: PayhooksDatabase, logger: Logger): Promise<void> {
  const counts = await countEventsNeedingAttention(store);
  const { dead, invalid, ignored } = counts;
  if (dead + invalid + ignored === 0) {
    logger.info(counts, 'no dead, invalid or ignored events are stored');
    return;
  }
  logger.warn(
    counts,
    `stored events need attention: ${dead} dead, ${invalid} invalid, ${ignored} ignored. ` +
      'List them with `payhooks events list --status dead` (or invalid, ignored) and `payhooks events show <eventId>`; ' +
      'once the cause is fixed (a handler mended or registered), re-queue them with `payhooks replay --status dead` or `payhooks replay <eventId>…`',
  );
}
