import type { Receiver } from '../receiver/receiver.js';
import type { HttpHandler } from './http-handler.js';

/**
 * A receiver as the adapters' {@link HttpHandler}: a POST's body is read (to the receiver's limit, inside its
 * budget) and handed to `receive` as bytes; a body an app's parser already made something of is handed on as it is,
 * for the receiver to refuse with how to mount the route; any other method is answered by the receiver (405)
 * without reading a body.
 *
 * @example
 * http.createServer(nodeAdapter(receiverHandler(receiver)));
 */
export function receiverHandler(receiver: Receiver): HttpHandler {
  return {
    maxBodyBytes: receiver.maxBodyBytes,
    bodyBudget: receiver.bodyBudget,
    name: 'webhook',
    logger: receiver.logger,
    async handle({ method, headers, body }) {
      if (method !== 'POST') return receiver.receive({ method, headers, rawBody: new Uint8Array() });
      const read = await body();
      if ('refusal' in read) return read.refusal;
      // Bytes gone to an earlier reader: the receiver's answer says how to mount the route, as for a parsed body,
      // instead of a 400 that blames the sender.
      const rawBody = 'bytes' in read ? read.bytes : 'parsed' in read ? read.parsed : { bodyAlreadyRead: true };
      return receiver.receive({ method, headers, rawBody });
    },
  };
}
