import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Receiver } from '../receiver/receiver.js';
import { type HttpHandler, type HttpRequest, type HttpResponse, readOnce, type RequestBody } from './http-handler.js';
import { internalError } from './internal-error.js';
import { readNodeBody } from './read-body.js';
import { type ReceiverAdapterOptions, receiverHandler } from './receiver-handler.js';

/**
 * A `node:http` request handler around a receiver. It always answers, and its promise never rejects: when the
 * receiver throws, the answer is 500 `{"error":{"message":"Internal error."}}` and the error goes to the
 * receiver's logger, so a server needs no catch of its own.
 *
 * @example
 * http.createServer(nodeHandler(receiver)).listen(8787);
 */
export function nodeHandler(
  receiver: Receiver,
  options: ReceiverAdapterOptions = {},
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return nodeAdapter(receiverHandler(receiver, options));
}

/**
 * A `node:http` request handler around any {@link HttpHandler} (the receiver's, the console's API). It always
 * answers, and its promise never rejects, also when the client resets the connection mid-body: a `handle` that
 * throws is answered 500 and logged.
 *
 * @example
 * http.createServer(nodeAdapter(createAdminApi({ store, token })));
 */
export function nodeAdapter(handler: HttpHandler): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    let response: HttpResponse;
    try {
      response = await handler.handle(nodeRequest(handler, req, req.url));
    } catch (err) {
      response = internalError(handler, err, req);
    }
    writeNodeResponse(res, response);
  };
}

/**
 * A Node request as a handler sees it: the body is read (raw-body, to the handler's limit, inside its budget) only
 * when the handler asks for it; `alreadyRead` is what an earlier middleware left of it, if anything.
 */
export function nodeRequest(
  handler: HttpHandler,
  req: IncomingMessage,
  url: string | undefined,
  alreadyRead?: () => RequestBody | undefined,
): HttpRequest {
  return {
    method: req.method ?? 'GET',
    url: url ?? '/',
    headers: req.headers,
    body: readOnce(async () => alreadyRead?.() ?? readNodeBody(req, handler.maxBodyBytes, handler.bodyBudget)),
    clientAddress: req.socket.remoteAddress,
  };
}

/**
 * Writes an answer; a 413 also closes the connection, so the rest of the body is not awaited. An answer to a client
 * that is gone, or to a request something else already answered, is dropped.
 */
export function writeNodeResponse(res: ServerResponse, response: HttpResponse): void {
  if (res.headersSent || res.destroyed) return;
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  if (response.status === 413) res.setHeader('connection', 'close');
  res.end(response.body);
}
