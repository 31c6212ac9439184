import { timerDelay } from './duration.js';

/** A task run on a timer by {@link runPeriodically}. */
export interface PeriodicTask {
  /** Stops the timer, aborts the run in flight (its signal) and waits for it to end. */
  stop(): Promise<void>;
}

/**
 * Runs `task` every `everyMs` (and at once with `now`), never two runs at once: a tick that finds one still running
 * is skipped. The task handles its own failures (a rejection is swallowed here, so a bad run cannot stop the process);
 * `stop()` aborts its signal with `stopReason`. An interval a timer cannot hold throws a RangeError naming `what`.
 *
 * @example
 * const sweeper = runPeriodically(3_600_000, 'The sweeper interval', (signal) => sweep(signal).catch(log));
 * await sweeper.stop();
 */
export function runPeriodically(
  everyMs: number,
  what: string,
  task: (signal: AbortSignal) => Promise<void>,
  options: { now?: boolean; stopReason?: string } = {},
): PeriodicTask {
  // Past a timer's limit Node would run the interval every millisecond, back to back.
  const interval = timerDelay(everyMs, what);
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  const tick = () => {
    if (running || controller.signal.aborted) return;
    running = task(controller.signal)
      .catch(() => undefined)
      .finally(() => {
        running = undefined;
      });
  };
  if (options.now) tick();
  const timer = setInterval(tick, interval);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      controller.abort(new Error(options.stopReason ?? 'stopping'));
      await running;
    },
  };
}
