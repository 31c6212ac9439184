import type { Writable } from 'node:stream';

/**
 * Where the CLI prints: lines written in order, at the pace the reader takes them.
 *
 * A pipe is asynchronous in Node: what the reader has not taken yet waits in this process, and is lost if the
 * process exits first (`payhooks events list --json | jq` got the first 64 KB). So a command awaits each line,
 * and the process ends only after {@link Output.flushed}.
 */
export interface Output {
  /**
   * Writes `text` and a newline. Resolves once the stream takes more: at once while its buffer has room, on
   * 'drain' when it is full. Never rejects; once the reader has gone, lines are dropped.
   */
  line(text: string): Promise<void>;
  /**
   * Resolves once everything written to the stream so far (through this Output or not: progress, commander's
   * messages) has been handed to the system, or can never be because the reader went away. Never rejects.
   */
  flushed(): Promise<void>;
  /** The write error that lost output, if one happened; a reader closing early (EPIPE) is not one. */
  readonly failure: Error | undefined;
}

/**
 * Wraps a stream (stdout, stderr) as an {@link Output}, and takes over its 'error' event: a reader that closes
 * its end early (`payhooks events list | head -1`) makes the next write fail with EPIPE, which is the reader's
 * right and no error of the command, so it ends the output quietly instead of an unhandled 'error' event.
 *
 * @example
 * const out = outputTo(process.stdout);
 * await out.line(JSON.stringify(rows, null, 2));
 * await out.flushed();
 */
export function outputTo(stream: Writable): Output {
  let gone = false;
  let failure: Error | undefined;
  stream.on('error', (err: NodeJS.ErrnoException) => {
    gone = true;
    // ECONNRESET: the same, when the stream is a socket whose reader left with data unread.
    if (err.code !== 'EPIPE' && err.code !== 'ECONNRESET') failure ??= err;
  });
  const closed = () => gone || stream.destroyed || stream.writableEnded;

  return {
    line(text) {
      if (closed()) return Promise.resolve();
      if (stream.write(`${text}\n`)) return Promise.resolve();
      return settled(stream, (done) => stream.once('drain', done));
    },
    flushed() {
      if (closed()) return Promise.resolve();
      // Writes complete in order, so the callback of an empty write comes after every write before it.
      return settled(stream, (done) => stream.write('', () => done()));
    },
    get failure() {
      return failure;
    },
  };
}

/** Resolves when `start` calls back, or when the stream fails or closes first (then it never will). */
function settled(stream: Writable, start: (done: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      stream.off('error', done);
      stream.off('close', done);
      resolve();
    };
    stream.once('error', done);
    stream.once('close', done);
    start(done);
  });
}

let processOutputs: { out: Output; err: Output } | undefined;

/** The process's stdout and stderr as {@link Output}s, made once (each takes over its stream's 'error' event). */
export function stdio(): { out: Output; err: Output } {
  processOutputs ??= { out: outputTo(process.stdout), err: outputTo(process.stderr) };
  return processOutputs;
}
