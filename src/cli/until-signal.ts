import type { Logger } from 'pino';

/** Options of {@link untilSignal}. */
export interface UntilSignalOptions {
  /** How long `close` may take before it is given up on. Default: no limit. */
  deadlineMs?: number | undefined;
  /** Stops as a signal does when this resolves, with the reason it resolves to (a worker child's parent gone). */
  until?: Promise<string> | undefined;
  /**
   * The command's {@link watchStartupSignals}: a signal it noted while the command started stops at once, and it stops
   * listening once this does, so that each later signal is handled here alone.
   */
  startup?: StartupSignals | undefined;
}

/**
 * Resolves once SIGTERM or SIGINT has arrived (or `until` has resolved) and `close` has finished (a failed close is
 * logged, not thrown), so a long-running command exits 0 after a clean stop. With `deadlineMs`, a close that takes
 * longer (a database that stopped answering mid-shutdown) is given up on: logged, and the promise resolves to
 * false, so that the command exits non-zero instead of hanging until a supervisor's SIGKILL.
 *
 * @example
 * const clean = await untilSignal(logger, () => service.close(), { deadlineMs: 32_000 });
 */
export function untilSignal(logger: Logger, close: () => Promise<void>, options: UntilSignalOptions = {}): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let stopping = false;
    const stop = (why: { signal: string } | { reason: string }) => {
      // Ctrl-C in a terminal and a supervisor's SIGTERM can both arrive: one close, the second signal only noted.
      if (stopping) {
        logger.info(why, 'already shutting down');
        return;
      }
      stopping = true;
      logger.info(why, 'shutting down');
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
    process.once('SIGTERM', (signal) => stop({ signal }));
    process.once('SIGINT', (signal) => stop({ signal }));
    options.startup?.dispose();
    options.until?.then((reason) => stop({ reason }));
    options.startup?.arrived.then((reason) => stop({ reason }));
  });
}

/** What {@link watchStartupSignals} gives: the signals that arrived while a long-running command was starting. */
export interface StartupSignals {
  /** Aborts on the first SIGTERM or SIGINT: a start that waits (for a database slot) stops waiting. */
  signal: AbortSignal;
  /** Resolves, with the signal's name, once one has arrived ({@link untilSignal} stops on it). */
  arrived: Promise<string>;
  /** Stops listening ({@link untilSignal} calls it once it listens; call it too where the command ends otherwise). */
  dispose(): void;
}

/**
 * Listens for SIGTERM and SIGINT from the first moment of a long-running command, before {@link untilSignal} can.
 * Without a listener a signal takes its default action and the process dies where it stands: a supervisor that sends
 * SIGTERM as soon as the service says it listens can land in the instant between that line and `untilSignal`, on a
 * busy machine. A signal noted here stops a wait for the database, or the service once it has started; a second one
 * before the start is over stops the process at once (the signal's default action).
 *
 * @example
 * const startup = watchStartupSignals();
 * try {
 *   const running = await start({ signal: startup.signal });
 *   await untilSignal(logger, () => running.close(), { startup });
 * } finally {
 *   startup.dispose();
 * }
 */
export function watchStartupSignals(): StartupSignals {
  const controller = new AbortController();
  let arrive: (signal: string) => void = () => undefined;
  const arrived = new Promise<string>((resolve) => (arrive = resolve));
  const dispose = () => {
    process.removeListener('SIGTERM', onSignal);
    process.removeListener('SIGINT', onSignal);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    if (controller.signal.aborted) {
      // A second signal while still starting: its default action, as if nothing listened. A start held up elsewhere
      // (a database that accepts the connection and never answers) must not outlast a second Ctrl-C.
      dispose();
      process.kill(process.pid, signal);
      return;
    }
    controller.abort(new Error(`${signal} arrived while starting`));
    arrive(`${signal} while starting`);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return { signal: controller.signal, arrived, dispose };
}
