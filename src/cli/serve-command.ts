import { Option, type Command } from 'commander';
import type { Logger } from 'pino';
import { createLogger } from '../logger.js';
import { receiveServiceConfig, SERVICE_CONFIG_VARIABLE } from '../service/config-transfer.js';
import { loadHandlers } from '../service/load-handlers.js';
import { resolveServiceConfig } from '../service/resolve-service-config.js';
import { runService } from '../service/run-service.js';
import { explainedDatabaseError } from './database-error.js';
import type { ServiceRole } from '../service/service-config.js';
import { whenParentGone } from '../service/worker-process.js';
import { SilentFailure } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { type StartupSignals, untilSignal, watchStartupSignals } from './until-signal.js';

/** `payhooks serve`: resolves the service's configuration and runs it (payhooks/service) until a signal. */
export function addServeCommand(program: Command, ctx: CommandContext): void {
  program
    .command('serve')
    .description(
      'run the webhook receiver (POST /webhooks, /healthz, /readyz, /metrics) and the worker (your --handlers, or without them the Postgres mirror) until SIGTERM or SIGINT',
    )
    .addOption(
      new Option('--role <role>', 'receive only, run handlers only, or both').choices(['all', 'receiver', 'worker']).default('all'),
    )
    .option('--handlers <module>', 'a module whose default export registers handlers: export default (hooks) => hooks.on(…)')
    .option(
      '--single-process',
      'with --role all on PostgreSQL, run the handlers, the mirror and the sinks in this process instead of a worker child process (a CPU-bound handler or a stalled sink then delays acknowledgements)',
    )
    .action(async (opts: { role: ServiceRole; handlers?: string; singleProcess?: boolean }) => {
      const logger = createLogger({ level: ctx.env('serve').PAYHOOKS_LOG_LEVEL });
      // From the first moment: a SIGTERM before untilSignal listens would otherwise kill the process mid-start.
      const startup = watchStartupSignals();
      try {
        await serve(opts, logger, startup);
      } finally {
        startup.dispose();
      }
    });
}

/** Starts the service as `opts` say and runs it until a signal (or, in a worker child, its parent's end). */
async function serve(
  opts: { role: ServiceRole; handlers?: string; singleProcess?: boolean },
  logger: Logger,
  startup: StartupSignals,
): Promise<void> {
  // A worker child of serve (handed its configuration) watches that serve from the start, before anything is
  // awaited: one whose serve dies while it starts still stops once started. It must not run beside the next serve.
  const parentGone = opts.role === 'worker' && process.env[SERVICE_CONFIG_VARIABLE] !== undefined ? whenParentGone() : undefined;
  // A worker child runs with what its parent resolved, instead of reading the environment and the file again.
  const handed = opts.role === 'worker' ? await receiveServiceConfig() : undefined;
  const config = handed ?? (await resolveServiceConfig({ env: process.env, flags: { role: opts.role }, logger }));
  const register = opts.handlers ? await loadHandlers(opts.handlers) : undefined;
  let running: Awaited<ReturnType<typeof runService>>;
  try {
    running = await runService(config, {
      logger,
      register,
      handlersModule: opts.handlers,
      singleProcess: opts.singleProcess,
      reportToParent: parentGone !== undefined,
      signal: startup.signal,
    });
  } catch (err) {
    if (startup.signal.aborted) {
      // Stopped while it waited for the database: nothing was started, a clean stop.
      logger.info({ reason: (startup.signal.reason as Error).message }, 'stopped before the service started');
      return;
    }
    throw config.database.url ? explainedDatabaseError(config.database.url, err) : err;
  }
  // Running handlers get the worker's stop timeout; past it (and a little for the rest), exit regardless.
  const clean = await untilSignal(logger, () => running.close(), {
    deadlineMs: config.worker.stopTimeoutMs + 1500,
    until: parentGone,
    startup,
  });
  if (!clean) throw new SilentFailure();
}
