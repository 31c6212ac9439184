import type { Request, RequestHandler } from 'express';
import type { Receiver } from '../receiver/receiver.js';
import { receiveNode, writeNodeResponse } from './node-http.js';

/**
 * Express 5 middleware around a receiver. Mount it before any JSON body parser (or give the webhook path
 * `express.raw({ type: 'application/json' })`): the signature covers the exact bytes. When the receiver throws,
 * the error goes to `next(err)`, i.e. to the app's error handler (Express answers 500 by default).
 *
 * @example
 * app.post('/webhooks', expressMiddleware(receiver));
 */
export function expressMiddleware(receiver: Receiver): RequestHandler {
  return (req, res, next) => {
    receiveNode(receiver, req, consumedBody(req))
      .then((response) => writeNodeResponse(res, response))
      .catch(next);
  };
}

/**
 * What an earlier middleware left of the body: express.raw() leaves the bytes, which are fine; any other
 * parser leaves an object or a string, which the receiver refuses with a message on how to mount it.
 */
function consumedBody(req: Request): unknown {
  if (req.body !== undefined) return req.body;
  // Something read the stream without setting req.body: the bytes are gone just the same.
  if (req.readableEnded) return { bodyAlreadyRead: true };
  return undefined;
}
