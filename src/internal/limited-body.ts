import type { Readable } from 'node:stream';
import getRawBody from 'raw-body';

// Reading a request body up to a limit, for every HTTP surface of payhooks (the adapters of the receiver and of
// the console, and the simulator): refuse before reading a byte when Content-Length already says too much, stop
// reading as soon as the bytes pass the limit (so a huge upload is neither buffered nor drained), check the length
// declared, and hold the bytes of all unfinished bodies under one budget. Node streams are read by raw-body; a
// Fetch-API body (a web stream) by the loop below, to the same limit. Both give the outcome type below.

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

/** The length a Content-Length header declares; Node's parser and fetch runtimes have already refused a malformed one. */
function declaredLength(contentLength: string | null | undefined): number | undefined {
  return contentLength != null && /^\d+$/.test(contentLength) ? Number(contentLength) : undefined;
}

/** Counts bytes against the limit and the declared length; keeps the chunks while they fit (the web-stream reader's). */
class LimitedBody {
  readonly #limit: number;
  readonly #declared: number | undefined;
  #chunks: Uint8Array[] = [];
  #size = 0;

  constructor(limit: number, contentLength: string | null | undefined) {
    this.#limit = limit;
    this.#declared = declaredLength(contentLength);
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

/** What raw-body's error means for the request, by its `type` (and Node's code for a reset connection). */
function failureOf(err: unknown): BodyReadFailure {
  const { type, code } = (err ?? {}) as { type?: unknown; code?: unknown };
  if (type === 'entity.too.large') return 'too_large';
  if (type === 'request.size.invalid') return 'length_mismatch';
  if (type === 'request.aborted' || code === 'ECONNRESET') return 'aborted';
  return 'unreadable';
}

/**
 * Reads a Node stream (an `IncomingMessage`) up to `limit` bytes with raw-body, inside `budget`. Past the limit
 * raw-body stops listening and pauses the stream, leaving the rest unread: answer with `connection: close` so the
 * client stops sending. It always settles: raw-body answers an abort, an error, the end or the limit, and a stream
 * that closes without any of those (destroyed here when the budget evicts it, say) is settled here.
 *
 * @example
 * const read = await readNodeStream(req, 1024 * 1024, req.headers['content-length']);
 * if (!read.ok) return bodyReadRefusal(read.failure, 1024 * 1024);
 */
export function readNodeStream(stream: Readable, limit: number, contentLength?: string | null, budget?: BodyBudget): Promise<BodyRead> {
  const declared = declaredLength(contentLength);
  // Refused before a byte is read, and before the budget is asked for room.
  if (declared !== undefined && declared > limit) return Promise.resolve(failed('too_large'));
  // Someone else read it first; waiting for 'end' would hang.
  if (stream.readableEnded || stream.destroyed) return Promise.resolve(failed('unreadable'));
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: BodyRead) => {
      if (settled) return;
      settled = true;
      stream.off('data', count).off('close', onClose);
      held?.release();
      resolve(outcome);
    };
    // Evicted: the connection is cut at once rather than answered, since answering would keep reading its bytes;
    // to the sender that is a failed delivery like a 503, and it retries. raw-body then hears only 'close', which it
    // takes as the end of its listening without settling: the outcome is settled here.
    const held = budget?.hold(() => {
      settle(failed('busy'));
      stream.destroy();
    });
    // Beside raw-body's own listener: the same chunks, counted against the bytes all requests hold at once.
    const count = (chunk: Buffer | string) => {
      if (held && !held.add(typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength)) {
        settle(failed('busy'));
        stream.unpipe();
        stream.pause();
      }
    };
    const onClose = () => settle(failed('aborted'));
    stream.on('data', count).on('close', onClose);
    // The callback, not the promise: it runs inside the stream's 'end' (or 'aborted') event, before the 'close' that
    // follows it, which would otherwise be taken for an abort.
    getRawBody(stream, { limit, length: declared ?? null }, (err: getRawBody.RawBodyError | null, body: Buffer) =>
      settle(err ? failed(failureOf(err)) : { ok: true, body }),
    );
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
