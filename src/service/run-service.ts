import type { Logger } from 'pino';
import { PayhooksError } from '../errors.js';
import type { RegisterHandlers } from '../payhooks.js';
import { handlersModulePath, loadHandlers } from './load-handlers.js';
import type { ServiceConfig } from './service-config.js';
import { startService } from './start-service.js';
import { startWorkerProcess } from './worker-process.js';
import { reportRunsToParent, type WorkerReport } from './worker-reports.js';
import type { WorkerEvents } from '../worker/worker-events.js';
import { startTracing } from './start-tracing.js';

/** How long past the stop timeout the worker child has to give its leases back and exit before it is killed. */
const CHILD_STOP_MARGIN_MS = 1000;

/** Options of {@link runService}. */
export interface RunServiceOptions {
  logger: Logger;
  /**
   * The module that registers the handlers (its default export, or `register`): a path relative to the working
   * directory, or a file URL (`new URL('./handlers.js', import.meta.url)`). A worker child imports it (code cannot
   * cross a process boundary); this process too, unless `register` is given.
   */
  handlersModule?: string | URL | undefined;
  /**
   * Registers handlers on the instance before the worker starts: `handlersModule`'s export, already loaded (serve
   * loads it first to fail early). A function alone cannot reach a worker child: with role `all`, give
   * `handlersModule` too, or `singleProcess`.
   */
  register?: RegisterHandlers | undefined;
  /** Keep the worker in this process even where it would run in a child (`serve --single-process`). */
  singleProcess?: boolean | undefined;
  /**
   * This process is the worker child of a serve: send its handler runs to that serve over their IPC channel, for the
   * parent's /metrics (docs/metrics.md).
   */
  reportToParent?: boolean | undefined;
  /** Stops a start that waits for the database to admit it (a SIGTERM then): runService rejects with its reason. */
  signal?: AbortSignal | undefined;
}

/** The processes of `payhooks serve`, running: the service in this one, and its worker child where there is one. */
export interface RunningServiceProcesses {
  readonly url: string;
  /** Stops the service and the worker child together; handlers in flight get the worker's stop timeout. */
  close(): Promise<void>;
}

/**
 * Whether the worker runs in a child process (`serve --role worker`) while this one only receives. On a server it
 * does with role `all`, whatever the worker runs (your handlers, the mirror, sinks): the process that acknowledges
 * runs no handler, so a handler or sink that hangs, spins, eats memory or crashes cannot delay or stop
 * acknowledgements. `singleProcess` keeps them together. The embedded database belongs to one process, so there the
 * worker stays in this one.
 */
export function splitsWorker(config: Pick<ServiceConfig, 'role' | 'database'>, singleProcess = false): boolean {
  return config.role === 'all' && config.database.url !== undefined && !singleProcess;
}

/**
 * Runs the standalone service as `payhooks serve` does: {@link startService} in this process, and on a server its
 * worker in a child process of payhooks' own command line that gets this resolved configuration and imports
 * `handlersModule` ({@link splitsWorker}); the child stops when this process ends, however it ends. With
 * `config.tracing` on, each process starts the OpenTelemetry SDK first (docs/tracing.md).
 *
 * @example
 * const running = await runService(await resolveServiceConfig({ env: process.env }), {
 *   logger,
 *   handlersModule: new URL('./handlers.js', import.meta.url),
 * });
 * process.once('SIGTERM', () => void running.close());
 */
export async function runService(config: ServiceConfig, options: RunServiceOptions): Promise<RunningServiceProcesses> {
  const { logger, handlersModule } = options;
  // Refused on the embedded database too, where nothing splits: an app tried there must not fail first in production.
  if (options.register && handlersModule === undefined && config.role === 'all' && !options.singleProcess) {
    throw new PayhooksError(
      'runService got handlers as a function (register) without handlersModule: on PostgreSQL its worker runs in a child process, which cannot be handed a function. Give handlersModule, the module whose default export registers them (the child imports it), or singleProcess: true to run them in this process.',
    );
  }
  const register = options.register ?? (handlersModule !== undefined ? await loadHandlers(handlersModule) : undefined);
  const split = splitsWorker(config, options.singleProcess);
  const role = split ? 'receiver' : config.role;
  // Before anything that makes spans; a worker child starts its own from the configuration it is handed.
  const tracing = await startTracing(config.tracing, { role, logger });
  // A worker child reports to its serve from its worker's first event on.
  let reports: { stop(): void } | undefined;
  const observeWorker = options.reportToParent
    ? (events: WorkerEvents) => {
        reports = reportRunsToParent(events);
      }
    : undefined;
  let service: Awaited<ReturnType<typeof startService>>;
  try {
    service = await startService(config, { logger, role, register, observeWorker, signal: options.signal });
  } catch (err) {
    await tracing?.shutdown();
    throw err;
  }
  // As an absolute path: the child resolves a relative one against its own working directory.
  const handlersArgs = handlersModule !== undefined ? ['--handlers', handlersModulePath(handlersModule)] : [];
  // The child's handler runs are counted in this process's /metrics, which is the one scraped.
  const { handlerRun, eventDead } = service.metrics.observe;
  const onReport = (report: WorkerReport) => {
    for (const run of report.runs) handlerRun?.(run);
    for (const eventType of report.dead) eventDead?.({ eventType });
  };
  const worker = split ? startWorkerProcess(config, handlersArgs, logger, { onReport }) : undefined;
  return {
    url: service.url,
    async close() {
      // The child aborts what still runs at the stop timeout, then gives its leases back: a moment more before it is
      // killed (killed at the timeout itself, its leases were left to expire). Within serve's own deadline (+1.5 s).
      await Promise.all([service.close(), worker?.stop(config.worker.stopTimeoutMs + CHILD_STOP_MARGIN_MS)]);
      // After the worker has stopped: the runs it finished while stopping are reported too.
      reports?.stop();
      // Last: the spans of the shutdown itself are exported too.
      await tracing?.shutdown();
    },
  };
}
