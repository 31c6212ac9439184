import type { Logger } from 'pino';
import type { RegisterHandlers } from '../payhooks.js';
import type { ServiceConfig } from './service-config.js';
import { startService } from './start-service.js';
import { startWorkerProcess } from './worker-process.js';
import { startTracing } from './start-tracing.js';

/** How long past the stop timeout the worker child has to give its leases back and exit before it is killed. */
const CHILD_STOP_MARGIN_MS = 1000;

/** Options of {@link runService}. */
export interface RunServiceOptions {
  logger: Logger;
  /** Registers handlers on the instance before the worker starts (what `--handlers <module>` loads). */
  register?: RegisterHandlers | undefined;
  /** The module `register` came from: a worker child imports it again (code cannot cross a process boundary). */
  handlersModule?: string | undefined;
  /** Keep the worker in this process even where it would run in a child (`serve --single-process`). */
  singleProcess?: boolean | undefined;
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
 * worker in a child process that gets this resolved configuration ({@link splitsWorker}). With `config.tracing` on,
 * each process starts the OpenTelemetry SDK first (docs/tracing.md).
 *
 * @example
 * const running = await runService(await resolveServiceConfig({ env: process.env }), { logger });
 * process.once('SIGTERM', () => void running.close());
 */
export async function runService(config: ServiceConfig, options: RunServiceOptions): Promise<RunningServiceProcesses> {
  const { logger, register } = options;
  const split = splitsWorker(config, options.singleProcess);
  const role = split ? 'receiver' : config.role;
  // Before anything that makes spans; a worker child starts its own from the configuration it is handed.
  const tracing = await startTracing(config.tracing, { role, logger });
  let service: Awaited<ReturnType<typeof startService>>;
  try {
    service = await startService(config, { logger, role, register });
  } catch (err) {
    await tracing?.shutdown();
    throw err;
  }
  const handlersArgs = options.handlersModule ? ['--handlers', options.handlersModule] : [];
  const worker = split ? startWorkerProcess(config, handlersArgs, logger) : undefined;
  return {
    url: service.url,
    async close() {
      // The child aborts what still runs at the stop timeout, then gives its leases back: a moment more before it is
      // killed (killed at the timeout itself, its leases were left to expire). Within serve's own deadline (+1.5 s).
      await Promise.all([service.close(), worker?.stop(config.worker.stopTimeoutMs + CHILD_STOP_MARGIN_MS)]);
      // Last: the spans of the shutdown itself are exported too.
      await tracing?.shutdown();
    },
  };
}
