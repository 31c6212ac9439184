import { Presets, SingleBar } from 'cli-progress';

/** Progress of a bulk command through its events. */
export interface Progress {
  /** Counts `done` more events (the total grows if more turn up than counted at the start). */
  advance(done: number): void;
  stop(): void;
}

/**
 * Shows progress on stderr: a bar on a terminal, one plain line per step otherwise (logs, CI). Nothing when
 * the work fits one step, where progress would only be noise.
 *
 * @example
 * const progress = startProgress('re-queued', 12_000, 500);
 * progress.advance(500);
 */
export function startProgress(
  label: string,
  total: number,
  step: number,
  stream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
): Progress {
  if (total <= step) return { advance() {}, stop() {} };
  let done = 0;
  if (stream.isTTY) {
    const bar = new SingleBar(
      { format: `${label} {bar} {value}/{total} events ({percentage}%, ETA {eta_formatted})`, stream, hideCursor: true },
      Presets.shades_classic,
    );
    bar.start(total, 0);
    return {
      advance(n) {
        done += n;
        if (done > bar.getTotal()) bar.setTotal(done);
        bar.update(done);
      },
      stop: () => bar.stop(),
    };
  }
  return {
    advance(n) {
      done += n;
      stream.write(`${label} ${done}/${Math.max(total, done)} events\n`);
    },
    stop() {},
  };
}
