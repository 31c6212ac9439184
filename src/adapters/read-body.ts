import type { IncomingMessage } from 'node:http';
import { errorResponse } from '../internal/error-response.js';
import { type BodyBudget, type BodyRead, bodyReadRefusal, readNodeStream, readWebStream } from '../internal/limited-body.js';
import type { HttpResponse } from './http-handler.js';

/** The bytes of a body, or the answer to give when they could not be read. */
export type BodyOrRefusal = { bytes: Buffer } | { refusal: HttpResponse };

/**
 * Reads a Node request body up to `limit` bytes (raw-body, inside `budget`). Over the limit it stops at once (before
 * reading anything when Content-Length already says so) with the 413 answer, so a huge body is never buffered whole.
 */
export async function readNodeBody(req: IncomingMessage, limit: number, budget?: BodyBudget): Promise<BodyOrRefusal> {
  return refusalOrBody(await readNodeStream(req, limit, req.headers['content-length'], budget), limit);
}

/** Reads a Fetch-API request body up to `limit` bytes, cancelling the stream once it passes the limit. */
export async function readRequestBody(request: Request, limit: number, budget?: BodyBudget): Promise<BodyOrRefusal> {
  return refusalOrBody(await readWebStream(request.body, limit, request.headers.get('content-length'), budget), limit);
}

function refusalOrBody(read: BodyRead, limit: number): BodyOrRefusal {
  if (read.ok) return { bytes: read.body };
  const { status, message } = bodyReadRefusal(read.failure, limit);
  const refusal = errorResponse(status, message);
  // The rest of the body is not read: close the connection rather than wait for the client to finish sending it.
  if (read.failure === 'too_large' || read.failure === 'busy') refusal.headers.connection = 'close';
  return { refusal };
}
