import type { IncomingMessage } from 'node:http';
import getRawBody from 'raw-body';
import { error, tooLarge, type ReceiveResponse } from '../receiver/receiver.js';

/** The bytes of a body, or the answer to give when they could not be read. */
export type BodyRead = { body: Buffer } | { refusal: ReceiveResponse };

/**
 * Reads a Node request body up to `limit` bytes. Over the limit it stops at once (before reading anything
 * when Content-Length already says so) with the 413 answer, so a huge body is never buffered whole.
 */
export async function readNodeBody(req: IncomingMessage, limit: number): Promise<BodyRead> {
  try {
    return { body: await getRawBody(req, { limit, length: req.headers['content-length'] }) };
  } catch (cause) {
    const type = (cause as { type?: string }).type;
    if (type === 'entity.too.large') return { refusal: tooLarge(limit) };
    if (type === 'request.size.invalid') return { refusal: error(400, 'The body length does not match Content-Length.') };
    if (type === 'request.aborted') return { refusal: error(400, 'The client aborted the request.') };
    throw cause;
  }
}
