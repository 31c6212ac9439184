import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { backoffDelay } from '../internal/backoff.js';
import { SERVICE_CONFIG_VARIABLE, serializeServiceConfig } from './config-transfer.js';
import type { ServiceConfig } from './service-config.js';
import { isWorkerReport, type WorkerReport } from './worker-reports.js';

/** A `payhooks serve --role worker` child, restarted when it dies, stopped with its parent. */
export interface WorkerProcess {
  /** Asks the child to stop (SIGTERM) and waits for it, killing it after `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

/** The longest wait between restarts of a worker that keeps dying. */
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * payhooks' own command line, beside this module: dist/cli/entry.js in the package, src/cli/entry.ts when payhooks
 * runs from its sources (under a TypeScript loader the parent was started with, which the child inherits). Never
 * `process.argv[1]`: in an app that runs the service through `payhooks/service`, that is the app's own script.
 */
export const WORKER_ENTRY: string = fileURLToPath(
  new URL(`../cli/entry${import.meta.url.endsWith('.ts') ? '.ts' : '.js'}`, import.meta.url),
);

/** Node options that make `node` run something other than the script it is given, or that a second process cannot share. */
const NOT_FOR_THE_CHILD =
  /^(?:-[ep]|--eval|--print|--input-type|--watch|--watch-path|--watch-preserve-output|--test|--test-[\w-]+|-i|--interactive|-c|--check|--inspect|--inspect-brk|--inspect-wait|--inspect-port|--debug-port)(?:=|$)/;
/** Of those, the ones whose value is the next argument when it is not given with `=`. */
const TAKES_NEXT = new Set(['-e', '--eval', '-p', '--print', '--input-type', '--watch-path', '--inspect-port', '--debug-port']);

/**
 * The node options of a worker child: this process's (`--max-old-space-size`, a loader such as tsx for TypeScript
 * handlers), without those that would run this process's inline code again (`node -e`), supervise or test instead of
 * running the entry (`--watch`, `--test`), or take the debugger's port this process holds.
 *
 * @example
 * workerNodeArgs(['--max-old-space-size=512', '-e', 'import("./app.js")']) // ['--max-old-space-size=512']
 */
export function workerNodeArgs(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < execArgv.length; i++) {
    const arg = execArgv[i]!;
    if (!NOT_FOR_THE_CHILD.test(arg)) kept.push(arg);
    else if (TAKES_NEXT.has(arg)) i++;
  }
  return kept;
}

/**
 * Runs the worker beside this process's receiver, as a child process of payhooks' own command line
 * ({@link WORKER_ENTRY}, `serve --role worker`): handlers, the mirror and the sinks then have an event loop and a heap
 * of their own, so a CPU-bound handler cannot hold back acknowledgements (the sender allows 10 s), and a sink that
 * hangs, leaks or crashes its process cannot stop them.
 * The child gets this process's resolved `config` (in an environment variable, never in its arguments, which `ps`
 * shows), listens on a free loopback port for its own /healthz and /metrics, inherits stdout and stderr, and
 * is restarted with a growing delay (1 s doubling, at most 30 s) whenever it exits without being asked to.
 * It is connected to this process by an IPC channel, which closes when this process ends however it ends (SIGKILL
 * included): the child then stops as on SIGTERM ({@link whenParentGone}), so it never outlives this process. The
 * channel is Node's (`child.send`, `process.send` in the child); the child reports its handler runs over it
 * ({@link WorkerReport}), for `onReport`.
 *
 * @example
 * const worker = startWorkerProcess(config, ['--handlers', '/srv/app/handlers.js'], logger);
 * // … on SIGTERM:
 * await worker.stop(30_000);
 */
export function startWorkerProcess(
  config: ServiceConfig,
  extraArgs: readonly string[],
  logger: Logger,
  options: { onReport?: ((report: WorkerReport) => void) | undefined } = {},
): WorkerProcess {
  // It receives nothing, so it is given no webhook secret.
  const handed = serializeServiceConfig({
    ...config,
    role: 'worker',
    receiver: { ...config.receiver, host: '127.0.0.1', port: 0, secrets: undefined },
  });
  let child: ChildProcess | undefined;
  let stopping = false;
  let restarts = 0;
  let restartTimer: NodeJS.Timeout | undefined;

  const launch = () => {
    const args = [...workerNodeArgs(process.execArgv), WORKER_ENTRY, 'serve', '--role', 'worker', ...extraArgs];
    const started = Date.now();
    child = spawn(process.execPath, args, {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', [SERVICE_CONFIG_VARIABLE]: handed },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    logger.info({ pid: child.pid }, 'worker process started');
    // Unheard, a failure to signal the child or to use its channel would throw in the process that acknowledges.
    child.on('error', (err) => logger.error({ err }, 'the worker process could not be started or signalled'));
    // The child's handler runs, for this process's /metrics; the channel carries a TypeScript loader's messages too.
    child.on('message', (message) => {
      if (isWorkerReport(message)) options.onReport?.(message);
    });
    child.once('exit', (code, signal) => {
      child = undefined;
      if (stopping) return;
      // A worker that ran for a minute counts as healthy again: its next crash restarts it quickly.
      if (Date.now() - started > 60_000) restarts = 0;
      const delay = backoffDelay(++restarts, { baseMs: 1000, maxMs: MAX_RESTART_DELAY_MS, jitter: false });
      logger.error({ code, signal, restartInMs: delay }, 'the worker process exited; restarting it');
      restartTimer = setTimeout(launch, delay);
    });
  };
  launch();

  return {
    async stop(graceMs) {
      stopping = true;
      clearTimeout(restartTimer);
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => running.once('exit', () => resolve()));
      running.kill('SIGTERM');
      const killer = setTimeout(() => {
        logger.error(
          { pid: running.pid, graceMs },
          'the worker process did not stop in time; killing it (its leases expire, nothing is lost)',
        );
        running.kill('SIGKILL');
      }, graceMs);
      await exited;
      clearTimeout(killer);
    },
  };
}

/**
 * In a worker child started by {@link startWorkerProcess}: resolves when the serve process that started it is gone
 * (its IPC channel closed: the parent exited, crashed or was killed, even by SIGKILL or the OOM killer, which run
 * none of its shutdown). Undefined in a process started without a channel. Listen from the start: a parent that died
 * while this process was still starting is seen too.
 *
 * @example
 * const parentGone = whenParentGone();
 * await untilSignal(logger, () => running.close(), { until: parentGone });
 */
export function whenParentGone(): Promise<string> | undefined {
  if (typeof process.send !== 'function') return undefined;
  return new Promise((resolve) => {
    const gone = () => resolve('the serve process that started this worker is gone');
    if (!process.connected) gone();
    else process.once('disconnect', gone);
  });
}
