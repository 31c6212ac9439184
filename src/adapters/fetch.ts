import type { Receiver } from '../receiver/receiver.js';
import { type HttpHandler, type HttpRequest, type HttpResponse, readOnce } from './http-handler.js';
import { internalError } from './internal-error.js';
import { readRequestBody } from './read-body.js';
import { type ReceiverAdapterOptions, receiverHandler } from './receiver-handler.js';

/**
 * A Fetch-API handler around a receiver, for Next.js route handlers, Hono, Bun and Deno. It always resolves to a
 * Response: when the receiver throws, a 500 `{"error":{"message":"Internal error."}}`, the error going to the
 * receiver's logger.
 *
 * @example
 * // app/api/webhooks/route.ts
 * export const POST = fetchHandler(receiver);
 */
export function fetchHandler(receiver: Receiver, options: ReceiverAdapterOptions = {}): (request: Request) => Promise<Response> {
  return fetchAdapter(receiverHandler(receiver, options));
}

/**
 * A Fetch-API handler around any {@link HttpHandler}. It always resolves to a Response (500 when `handle` throws,
 * the error logged). The body stream is read, to the handler's limit, only when the handler asks for it.
 *
 * @example
 * app.all('/admin/api/*', (c) => fetchAdapter(createAdminApi({ store, token }))(c.req.raw));
 */
export function fetchAdapter(handler: HttpHandler): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = pathAndQuery(request.url);
    let response: HttpResponse;
    try {
      response = await handler.handle(fetchRequest(handler, request, url));
    } catch (err) {
      response = internalError(handler, err, { method: request.method, url });
    }
    return new Response(response.body, { status: response.status, headers: response.headers });
  };
}

function fetchRequest(handler: HttpHandler, request: Request, url: string): HttpRequest {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  return {
    method: request.method,
    url,
    headers,
    // A middleware read the body first (Hono's c.req.json(), say): the bytes are gone.
    body: readOnce(async () =>
      request.bodyUsed ? { consumed: true } : readRequestBody(request, handler.maxBodyBytes, handler.bodyBudget),
    ),
    clientAddress: undefined,
  };
}

/** The path and query of a request's absolute URL, as a server's request line has them. */
function pathAndQuery(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.pathname}${parsed.search}`;
  } catch {
    return url;
  }
}
