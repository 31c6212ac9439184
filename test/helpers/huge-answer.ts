import { createServer } from 'node:http';
import { listen } from './servers.js';

/** What a {@link hugeAnswer} server managed to send of its answer. */
export interface AnswerProgress {
  /** Bytes the socket accepted (written and not held back by backpressure). */
  bytes: number;
  /** The whole answer was written. */
  finished: boolean;
  /** The connection closed (the client went away, or the answer was done). */
  closed: boolean;
}

/**
 * A loopback server that answers every request with `status` and a body of `totalBytes` starting with
 * `BEGIN-OF-ANSWER ` then `x`s, written as fast as the client reads it (backpressure respected), so that what it
 * managed to send shows how much the client read. `sent` describes the last answer.
 */
export async function hugeAnswer(status: number, totalBytes: number) {
  const sent: AnswerProgress = { bytes: 0, finished: false, closed: false };
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const first = Buffer.concat([Buffer.from('BEGIN-OF-ANSWER '), chunk.subarray(16)]);
  const server = createServer((req, res) => {
    req.resume();
    Object.assign(sent, { bytes: 0, finished: false, closed: false });
    res.on('close', () => (sent.closed = true));
    // A client that cancels mid-body may surface as a write error; the test reads `sent`, not this.
    res.on('error', () => undefined);
    res.writeHead(status, { 'content-type': 'text/plain', 'content-length': String(totalBytes) });
    const pump = () => {
      while (sent.bytes < totalBytes && !res.destroyed) {
        const piece = sent.bytes === 0 ? first : chunk.subarray(0, Math.min(chunk.length, totalBytes - sent.bytes));
        const more = res.write(piece);
        sent.bytes += piece.length;
        if (!more) {
          res.once('drain', pump);
          return;
        }
      }
      if (sent.bytes >= totalBytes) {
        sent.finished = true;
        res.end();
      }
    };
    pump();
  });
  return { ...(await listen(server)), sent };
}
