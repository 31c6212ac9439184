import type { Readable } from 'node:stream';

// Reading a request body up to a limit, for every HTTP surface of payhooks (the receiver's adapters and the
// simulator): refuse before reading a byte when Content-Length already says too much, stop reading as soon as
// the bytes pass the limit (so a huge upload is neither buffered nor drained), and check the length declared.
// A Node-stream and a web-stream variant share the counting below and the outcome type.

/** Why a body could not be read whole. */
export type BodyReadFailure = 'too_large' | 'length_mismatch' | 'aborted' | 'unreadable' | 'busy';

/** The bytes of a body, or why they could not be read. */
export type BodyRead = { ok: true; body: Buffer } | { ok: false; failure: BodyReadFailure };

/**
 * The status and message to answer a failed read with (413 over the limit, 400 otherwise).
 *
 * @example
 * bodyReadRefusal('too_large', 1048576); // { status: 413, message: 'The body is larger than the limit of 1048576 bytes.' }
 */
export function bodyReadRefusal(failure: BodyReadFailure, limit: number): { status: number; message: string } {
  switch (failure) {
    case 'too_large':
      return { status: 413, message: `The body is larger than the limit of ${limit} bytes.` };
    case 'length_mismatch':
      return { status: 400, message: 'The body length does not match Content-Length.' };
    case 'aborted':
      return { status: 400, message: 'The client aborted the request.' };
    case 'unreadable':
      return { status: 400, message: 'The request body could not be read.' };
    case 'busy':
      return { status: 503, message: 'The receiver holds too many unfinished request bodies right now; retry shortly.' };
  }
}

const failed = (failure: BodyReadFailure): BodyRead => ({ ok: false, failure });

/** One body being read under a {@link BodyBudget}. */
interface Holding {
  bytes: number;
  /** Called when a smaller body needs room: this reader must give up (answer 503) and drop its bytes. */
  evict: () => void;
}

/**
 * The bytes of unfinished request bodies held in memory at once, across every request of a receiver. Bodies
 * are read whole before their signature can be checked, so without a bound, many connections each sending part
 * of a large body can exhaust memory before any of them is authenticated. Past the bound the largest body
 * being read gives way (its request is answered 503 and its bytes dropped), so small, quick deliveries, which is
 * what the service sends, keep getting through while a flood of large unfinished bodies is turned away.
 *
 * @example
 * const budget = new BodyBudget(64 * 1024 * 1024);
 * const read = await readNodeStream(req, 1024 * 1024, req.headers['content-length'], budget);
 */
export class BodyBudget {
  readonly limitBytes: number;
  #total = 0;
  readonly #holdings = new Set<Holding>();

  constructor(limitBytes: number) {
    if (!Number.isSafeInteger(limitBytes) || limitBytes <= 0) {
      throw new RangeError(`maxInFlightBodyBytes must be a positive whole number of bytes, not ${String(limitBytes)}.`);
    }
    this.limitBytes = limitBytes;
  }

  /** Bytes held now. */
  get heldBytes(): number {
    return this.#total;
  }

  /** Starts holding a body; `evict` is called if it has to give way to others. */
  hold(evict: () => void): { add(bytes: number): boolean; release(): void } {
    const holding: Holding = { bytes: 0, evict };
    this.#holdings.add(holding);
    return { add: (bytes) => this.#add(holding, bytes), release: () => this.#release(holding) };
  }

  /** Counts more bytes of `holding`; false when it is itself the largest body and must give way. */
  #add(holding: Holding, bytes: number): boolean {
    if (!this.#holdings.has(holding)) return false;
    holding.bytes += bytes;
    this.#total += bytes;
    while (this.#total > this.limitBytes) {
      let largest = holding;
      for (const other of this.#holdings) if (other.bytes > largest.bytes) largest = other;
      this.#release(largest);
      if (largest === holding) return false;
      largest.evict();
    }
    return true;
  }

  #release(holding: Holding): void {
    if (!this.#holdings.delete(holding)) return;
    this.#total -= holding.bytes;
    holding.bytes = 0;
  }
}

/** Counts bytes against the limit and the declared length; keeps the chunks while they fit. */
class LimitedBody {
  readonly #limit: number;
  readonly #declared: number | undefined;
  #chunks: Uint8Array[] = [];
  #size = 0;

  constructor(limit: number, contentLength: string | null | undefined) {
    this.#limit = limit;
    // Node's parser and fetch runtimes have already refused a malformed Content-Length; anything else is ignored.
    this.#declared = contentLength != null && /^\d+$/.test(contentLength) ? Number(contentLength) : undefined;
  }

  /** Content-Length alone says the body is over the limit: refuse without reading it. */
  get declaredTooLarge(): boolean {
    return this.#declared !== undefined && this.#declared > this.#limit;
  }

  /** Adds a chunk; false once the bytes pass the limit (the chunks are dropped then, the caller stops reading). */
  add(chunk: Uint8Array): boolean {
    this.#size += chunk.byteLength;
    if (this.#size > this.#limit) {
      this.#chunks = [];
      return false;
    }
    this.#chunks.push(chunk);
    return true;
  }

  finish(): BodyRead {
    if (this.#declared !== undefined && this.#declared !== this.#size) return failed('length_mismatch');
    return { ok: true, body: Buffer.concat(this.#chunks, this.#size) };
  }
}

/**
 * Reads a Node stream (an `IncomingMessage`) up to `limit` bytes. Past the limit it stops listening and pauses
 * the stream, leaving the rest unread: answer with `connection: close` so the client stops sending.
 *
 * @example
 * const read = await readNodeStream(req, 1024 * 1024, req.headers['content-length']);
 * if (!read.ok) return bodyReadRefusal(read.failure, 1024 * 1024);
 */
export function readNodeStream(stream: Readable, limit: number, contentLength?: string | null, budget?: BodyBudget): Promise<BodyRead> {
  const body = new LimitedBody(limit, contentLength);
  if (body.declaredTooLarge) return Promise.resolve(failed('too_large'));
  // Someone else read it first; waiting for 'end' would hang.
  if (stream.readableEnded || stream.destroyed) return Promise.resolve(failed('unreadable'));
  return new Promise((resolve) => {
    const stopReading = (outcome: BodyRead) => {
      settle(outcome);
      stream.unpipe();
      stream.pause();
    };
    // Evicted: the connection is cut at once rather than answered, since answering would keep reading its bytes;
    // to the sender that is a failed delivery like a 503, and it retries.
    const held = budget?.hold(() => {
      stopReading(failed('busy'));
      stream.destroy();
    });
    const settle = (outcome: BodyRead) => {
      stream.off('data', onData).off('end', onEnd).off('error', onError).off('close', onClose);
      held?.release();
      resolve(outcome);
    };
    const onData = (chunk: Buffer | string) => {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      if (held && !held.add(bytes.byteLength)) return stopReading(failed('busy'));
      if (!body.add(bytes)) stopReading(failed('too_large'));
    };
    const onEnd = () => settle(body.finish());
    // An IncomingMessage reports a client that went away as ECONNRESET ("aborted"), or closes before its end.
    const onError = (err: NodeJS.ErrnoException) => settle(failed(err.code === 'ECONNRESET' ? 'aborted' : 'unreadable'));
    const onClose = () => settle(failed('aborted'));
    stream.on('data', onData).on('end', onEnd).on('error', onError).on('close', onClose);
  });
}

/**
 * Reads a web `ReadableStream` (a Fetch-API `Request.body`) up to `limit` bytes, cancelling the stream once the
 * bytes pass the limit.
 *
 * @example
 * const read = await readWebStream(request.body, 1024 * 1024, request.headers.get('content-length'));
 */
export async function readWebStream(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
  contentLength?: string | null,
  budget?: BodyBudget,
): Promise<BodyRead> {
  const body = new LimitedBody(limit, contentLength);
  // Refused before reading a byte; the runtime decides what becomes of the unread body.
  if (body.declaredTooLarge) return failed('too_large');
  if (stream === null) return body.finish();
  if (stream.locked) return failed('unreadable');
  const reader = stream.getReader();
  let evicted = false;
  const held = budget?.hold(() => {
    evicted = true;
    void reader.cancel().catch(() => undefined);
  });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (evicted || (value && held && !held.add(value.byteLength))) {
        await reader.cancel().catch(() => undefined);
        return failed('busy');
      }
      if (done) return body.finish();
      if (!body.add(value)) {
        await reader.cancel().catch(() => undefined);
        return failed('too_large');
      }
    }
  } catch {
    return failed(evicted ? 'busy' : 'unreadable');
  } finally {
    held?.release();
    reader.releaseLock();
  }
}
