import type { Request, RequestHandler } from 'express';
import type { Receiver } from '../receiver/receiver.js';
import type { HttpHandler, RequestBody } from './http-handler.js';
import { nodeRequest, writeNodeResponse } from './node-http.js';
import { type ReceiverAdapterOptions, receiverHandler } from './receiver-handler.js';

/**
 * Express 5 middleware around a receiver. Mount it before any JSON body parser (or give the webhook path
 * `express.raw({ type: 'application/json' })`): the signature covers the exact bytes. When the receiver throws,
 * the error goes to `next(err)`, i.e. to the app's error handler (Express answers 500 by default).
 *
 * @example
 * app.post('/webhooks', expressMiddleware(receiver));
 */
export function expressMiddleware(receiver: Receiver, options: ReceiverAdapterOptions = {}): RequestHandler {
  return expressAdapter(receiverHandler(receiver, options));
}

/**
 * Express 5 middleware around any {@link HttpHandler}, mounted at any path (the handler sees the original URL).
 * What a body parser mounted earlier left in `req.body` is handed to the handler as `parsed`; otherwise the body is
 * read when the handler asks for it. A `handle` that throws goes to `next(err)`.
 *
 * @example
 * app.use('/admin/api', expressAdapter(createAdminApi({ store, token })));
 */
export function expressAdapter(handler: HttpHandler): RequestHandler {
  return (req, res, next) => {
    handler
      .handle(nodeRequest(handler, req, req.originalUrl, () => consumedBody(req)))
      .then((response) => writeNodeResponse(res, response))
      .catch(next);
  };
}

/**
 * What an earlier middleware left of the body: express.raw() leaves the bytes, a JSON or text parser an object or a
 * string; undefined when the stream is still unread.
 */
function consumedBody(req: Request): RequestBody | undefined {
  if (req.body !== undefined) return { parsed: req.body };
  // Something read the stream without setting req.body: the bytes are gone just the same.
  if (req.readableEnded) return { consumed: true };
  return undefined;
}
