import type { Logger } from 'pino';

/**
 * Resolves once SIGTERM or SIGINT has arrived and `close` has finished (a failed close is logged, not
 * thrown), so a long-running command exits 0 after a clean stop. With `deadlineMs`, a close that takes
 * longer (a database that stopped answering mid-shutdown) is given up on: logged, and the promise resolves to
 * false, so that the command exits non-zero instead of hanging until a supervisor's SIGKILL.
 *
 * @example
 * const clean = await untilSignal(logger, () => service.close(), { deadlineMs: 32_000 });
 */
export function untilSignal(logger: Logger, close: () => Promise<void>, options: { deadlineMs?: number } = {}): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let stopping = false;
    const stop = (signal: string) => {
      // Ctrl-C in a terminal and a supervisor's SIGTERM can both arrive: one close, the second signal only noted.
      if (stopping) {
        logger.info({ signal }, 'already shutting down');
        return;
      }
      stopping = true;
      logger.info({ signal }, 'shutting down');
      let timer: NodeJS.Timeout | undefined;
      if (options.deadlineMs !== undefined) {
        timer = setTimeout(() => {
          logger.error(
            { deadlineMs: options.deadlineMs },
            'shutdown did not finish in time; exiting anyway (leases expire, nothing is lost)',
          );
          resolve(false);
        }, options.deadlineMs);
        timer.unref();
      }
      close().then(
        () => {
          clearTimeout(timer);
          resolve(true);
        },
        (err: unknown) => {
          clearTimeout(timer);
          logger.error({ err }, 'shutdown failed');
          resolve(true);
        },
      );
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
