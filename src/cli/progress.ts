import { Presets, SingleBar } from 'cli-progress';

/** Progress of a bulk command through its items. */
export interface Progress {
  /** Counts `done` more items (the total grows if more turn up than counted at the start). */
  advance(done: number): void;
  stop(): void;
}

/** Options of {@link startProgress}. */
export interface ProgressOptions {
  /** What is counted, in the plural. Default `events`. */
  unit?: string | undefined;
  /** How many were done before this run (a resumed job): the count starts there. Default 0. */
  startAt?: number | undefined;
}

/**
 * Shows progress on stderr: a bar on a terminal, one plain line per step otherwise (logs, CI). Nothing when
 * the work fits one step, where progress would only be noise.
 *
 * @example
 * const progress = startProgress('re-queued', 12_000, 500);
 * progress.advance(500);
 * // a resumed backfill: "read 600/1000 customers", then "read 700/1000 customers" …
 * const read = startProgress('read', 1000, 100, process.stderr, { unit: 'customers', startAt: 500 });
 */
export function startProgress(
  label: string,
  total: number,
  step: number,
  stream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
  options: ProgressOptions = {},
): Progress {
  if (total <= step) return { advance() {}, stop() {} };
  const unit = options.unit ?? 'events';
  let done = options.startAt ?? 0;
  if (stream.isTTY) {
    const bar = new SingleBar(
      { format: `${label} {bar} {value}/{total} ${unit} ({percentage}%, ETA {eta_formatted})`, stream, hideCursor: true },
      Presets.shades_classic,
    );
    bar.start(Math.max(total, done), done);
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
      stream.write(`${label} ${done}/${Math.max(total, done)} ${unit}\n`);
    },
    stop() {},
  };
}
