import { errorResponse } from '../internal/error-response.js';
import type { Receiver, ReceiveResponse } from '../receiver/receiver.js';

/**
 * The answer of an adapter whose receiver threw (a bug, or a custom scheme or hook that failed): 500 with a
 * generic message, the error itself only in the receiver's log. The sender retries a 500, and nothing was
 * acknowledged, so no delivery is lost.
 */
export function internalError(
  receiver: Receiver,
  err: unknown,
  request: { method?: string | undefined; url?: string | undefined },
): ReceiveResponse {
  receiver.logger?.error({ err, method: request.method, path: request.url?.split('?', 1)[0] }, 'webhook request failed; answered 500');
  return errorResponse(500, 'Internal error.');
}
