import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Receiver, ReceiveResponse } from '../receiver/receiver.js';
import { internalError } from './internal-error.js';
import { readNodeBody } from './read-body.js';

/**
 * A `node:http` request handler around a receiver. It always answers, and its promise never rejects: when the
 * receiver throws, the answer is 500 `{"error":{"message":"Internal error."}}` and the error goes to the
 * receiver's logger, so a server needs no catch of its own.
 *
 * @example
 * http.createServer(nodeHandler(receiver)).listen(8787);
 */
export function nodeHandler(receiver: Receiver): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    let response: ReceiveResponse;
    try {
      response = await receiveNode(receiver, req);
    } catch (err) {
      response = internalError(receiver, err, req);
    }
    writeNodeResponse(res, response);
  };
}

/** Reads the body of a Node request (unless it is not a POST) and runs the receiver on it. */
export async function receiveNode(receiver: Receiver, req: IncomingMessage, parsedBody?: unknown): Promise<ReceiveResponse> {
  const method = req.method ?? 'GET';
  if (method !== 'POST') return receiver.receive({ method, headers: req.headers, rawBody: new Uint8Array() });
  let rawBody = parsedBody;
  if (rawBody === undefined) {
    const read = await readNodeBody(req, receiver.maxBodyBytes, receiver.bodyBudget);
    if ('refusal' in read) return read.refusal;
    rawBody = read.body;
  }
  return receiver.receive({ method, headers: req.headers, rawBody });
}

/** Writes a receiver's answer; a 413 also closes the connection, so the rest of the body is not awaited. */
export function writeNodeResponse(res: ServerResponse, response: ReceiveResponse): void {
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  if (response.status === 413) res.setHeader('connection', 'close');
  res.end(response.body);
}
