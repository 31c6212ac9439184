import type { Receiver } from '../receiver/receiver.js';
import type { HttpHandler, HttpRequest } from './http-handler.js';

/**
 * Where the receiver adapters find a delivery's account (docs/accounts.md#receiving): a function of the request, or
 * `'path'` for the last segment of its path (`/webhooks/gym-north` → `gym-north`). Undefined: the default account.
 */
export type AccountOfRequest = 'path' | ((request: HttpRequest) => string | undefined);

/** Options of the receiver adapters (`nodeHandler`, `expressMiddleware`, `fetchHandler`). */
export interface ReceiverAdapterOptions {
  /** Which account a delivery is for; default: none, the default account's route (`POST /webhooks`). */
  account?: AccountOfRequest | undefined;
}

/**
 * The last segment of a request's path, decoded; undefined when there is none or it does not decode. What an account
 * route `/webhooks/{account}` names.
 *
 * @example
 * lastPathSegment('/webhooks/gym-north?x=1') // 'gym-north'
 */
export function lastPathSegment(url: string): string | undefined {
  const path = url.split('?', 1)[0] ?? '';
  const segment = path
    .split('/')
    .filter((part) => part !== '')
    .at(-1);
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * A receiver as the adapters' {@link HttpHandler}: a POST's body is read (to the receiver's limit, inside its
 * budget) and handed to `receive` as bytes; a body an app's parser already made something of is handed on as it is,
 * for the receiver to refuse with how to mount the route; any other method is answered by the receiver (405)
 * without reading a body.
 *
 * @example
 * http.createServer(nodeAdapter(receiverHandler(receiver)));
 */
export function receiverHandler(receiver: Receiver, options: ReceiverAdapterOptions = {}): HttpHandler {
  const { account } = options;
  const accountOf =
    account === undefined
      ? () => undefined
      : account === 'path'
        ? (request: HttpRequest) => lastPathSegment(request.url) ?? ''
        : (request: HttpRequest) => account(request);
  return {
    maxBodyBytes: receiver.maxBodyBytes,
    bodyBudget: receiver.bodyBudget,
    name: 'webhook',
    logger: receiver.logger,
    async handle(request) {
      const { method, headers, body } = request;
      // Asked before the body is read: an unknown account costs no read (and is answered as one whose signature fails).
      const routeAccount = accountOf(request);
      if (method !== 'POST') return receiver.receive({ method, headers, rawBody: new Uint8Array(), account: routeAccount });
      const read = await body();
      if ('refusal' in read) return read.refusal;
      // Bytes gone to an earlier reader: the receiver's answer says how to mount the route, as for a parsed body,
      // instead of a 400 that blames the sender.
      const rawBody = 'bytes' in read ? read.bytes : 'parsed' in read ? read.parsed : { bodyAlreadyRead: true };
      return receiver.receive({ method, headers, rawBody, account: routeAccount });
    },
  };
}
