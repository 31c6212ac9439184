import { errorResponse } from '../internal/error-response.js';
import type { HttpHandler, HttpResponse } from './http-handler.js';

/**
 * The answer of an adapter whose handler threw (a bug, or a custom scheme or hook that failed): 500 with a generic
 * message, the error itself only in the handler's log (`webhook request failed; answered 500` for the receiver).
 * The sender retries a 500, and nothing was acknowledged, so no delivery is lost.
 */
export function internalError(
  handler: Pick<HttpHandler, 'name' | 'logger'>,
  err: unknown,
  request: { method?: string | undefined; url?: string | undefined },
): HttpResponse {
  handler.logger?.error(
    { err, method: request.method, path: request.url?.split('?', 1)[0] },
    `${handler.name} request failed; answered 500`,
  );
  return errorResponse(500, 'Internal error.');
}
