import type { Logger } from 'pino';

/**
 * Resolves once SIGTERM or SIGINT has arrived and `close` has finished (a failed close is logged, not
 * thrown), so a long-running command exits 0 after a clean stop.
 *
 * @example
 * await untilSignal(logger, () => service.close());
 */
export function untilSignal(logger: Logger, close: () => Promise<void>): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down');
      close().then(resolve, (err: unknown) => {
        logger.error({ err }, 'shutdown failed');
        resolve();
      });
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}
