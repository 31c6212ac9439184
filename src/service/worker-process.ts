import { type ChildProcess, spawn } from 'node:child_process';
import type { Logger } from 'pino';
import { SERVICE_CONFIG_VARIABLE, serializeServiceConfig } from './config-transfer.js';
import type { ServiceConfig } from './service-config.js';

/** A `payhooks serve --role worker` child, restarted when it dies, stopped with its parent. */
export interface WorkerProcess {
  /** Asks the child to stop (SIGTERM) and waits for it, killing it after `graceMs`. */
  stop(graceMs: number): Promise<void>;
}

/** The longest wait between restarts of a worker that keeps dying. */
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * Runs the worker beside this process's receiver, as a child process of the same command: handlers, the mirror and
 * the sinks then have an event loop and a heap of their own, so a CPU-bound handler cannot hold back acknowledgements
 * (the sender allows 10 s), and a sink that hangs, leaks or crashes its process cannot stop them.
 * The child gets this process's resolved `config` (in an environment variable, never in its arguments, which `ps`
 * shows), listens on a free loopback port for its own /healthz and /metrics, inherits stdout and stderr, and
 * is restarted with a growing delay (1 s doubling, at most 30 s) whenever it exits without being asked to.
 *
 * @example
 * const worker = startWorkerProcess(config, ['--handlers', './handlers.js'], logger);
 * // … on SIGTERM:
 * await worker.stop(30_000);
 */
export function startWorkerProcess(config: ServiceConfig, extraArgs: readonly string[], logger: Logger): WorkerProcess {
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
    const args = [...process.execArgv, process.argv[1]!, 'serve', '--role', 'worker', ...extraArgs];
    const started = Date.now();
    child = spawn(process.execPath, args, {
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', [SERVICE_CONFIG_VARIABLE]: handed },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    logger.info({ pid: child.pid }, 'worker process started');
    child.once('exit', (code, signal) => {
      child = undefined;
      if (stopping) return;
      // A worker that ran for a minute counts as healthy again: its next crash restarts it quickly.
      if (Date.now() - started > 60_000) restarts = 0;
      const delay = Math.min(MAX_RESTART_DELAY_MS, 1000 * 2 ** restarts++);
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
