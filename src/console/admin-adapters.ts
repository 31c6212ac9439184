import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request as ExpressRequest, RequestHandler } from 'express';
import { type BodyOrRefusal, readNodeBody, readRequestBody } from '../adapters/read-body.js';
import { errorResponse, type JsonResponse } from '../internal/error-response.js';
import type { AdminApi, AdminBodyReader } from './admin-api.js';

// Each adapter only describes the request and writes the answer: the API decides who gets in before it asks for
// the body, and reads it through the shared bounded reader (which settles, never throws, when the client aborts).

/** The console's API with an adapter for each framework, as `hooks.admin()` returns it. */
export interface AdminHandlers {
  api: AdminApi;
  /** `http.createServer((req, res) => req.url?.startsWith('/admin/') ? admin.node()(req, res) : …)`. */
  node(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** `app.use('/admin/api', admin.express())`, before or after `express.json()`. */
  express(): RequestHandler;
  /** `app.all('/admin/api/*', (c) => admin.fetch()(c.req.raw))`. */
  fetch(): (request: Request) => Promise<Response>;
}

/** The console's requests are small JSON documents; anything larger is refused unread. */
const MAX_ADMIN_BODY_BYTES = 64 * 1024;

/**
 * A `node:http` handler around the console's API; mount it where requests to `/admin/…` arrive. Its promise
 * never rejects, also when the client goes away mid-body.
 *
 * @example
 * if (req.url?.startsWith('/admin')) return adminNodeHandler(admin)(req, res);
 */
export function adminNodeHandler(api: AdminApi): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const response = await answer(() =>
      api.handle({
        method: req.method ?? 'GET',
        url: req.url ?? '/',
        headers: req.headers,
        body: nodeBody(req),
        fromLoopback: isLoopback(req),
        clientAddress: req.socket.remoteAddress,
      }),
    );
    writeNodeResponse(res, response);
  };
}

/**
 * Express 5 middleware around the console's API, mounted at any path (it answers by the original URL). A body a
 * JSON parser already read is taken from `req.body`. It always answers and never calls `next` with an error.
 *
 * @example
 * app.use('/admin/api', adminExpressHandler(api));
 */
export function adminExpressHandler(api: AdminApi): RequestHandler {
  return (req: ExpressRequest, res) => {
    const parsed: unknown = req.body;
    const body: AdminBodyReader | string =
      parsed === undefined ? nodeBody(req) : typeof parsed === 'string' ? parsed : JSON.stringify(parsed);
    void answer(() =>
      api.handle({
        method: req.method,
        url: req.originalUrl,
        headers: req.headers,
        body,
        fromLoopback: isLoopback(req),
        clientAddress: req.socket.remoteAddress,
      }),
    ).then((response) => writeNodeResponse(res, response));
  };
}

/**
 * A Fetch-API handler around the console's API (Hono, Next.js route handlers, Bun, Deno). The body is read, up to
 * 64 KiB, only once the token is checked.
 *
 * @example
 * app.all('/admin/api/*', (c) => adminFetch(c.req.raw));
 */
export function adminFetchHandler(api: AdminApi): (request: Request) => Promise<Response> {
  return async (request) => {
    const response = await answer(() => {
      const url = new URL(request.url);
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => {
        headers[name] = value;
      });
      const body: AdminBodyReader = async () => textOrRefusal(await readRequestBody(request, MAX_ADMIN_BODY_BYTES));
      return api.handle({ method: request.method, url: `${url.pathname}${url.search}`, headers, body });
    });
    return new Response(response.body, { status: response.status, headers: response.headers });
  };
}

/** The API's answer; `handle` never rejects, but an adapter must not turn a surprise into an unhandled rejection. */
async function answer(handle: () => Promise<JsonResponse>): Promise<JsonResponse> {
  try {
    return await handle();
  } catch {
    return errorResponse(500, 'Internal error.');
  }
}

/** Reads a Node request's body when the API asks for it. */
function nodeBody(req: IncomingMessage): AdminBodyReader {
  return async () => textOrRefusal(await readNodeBody(req, MAX_ADMIN_BODY_BYTES));
}

function textOrRefusal(read: BodyOrRefusal): { text: string } | { refusal: JsonResponse } {
  return 'refusal' in read ? { refusal: read.refusal } : { text: read.body.toString('utf8') };
}

/** Writes the answer; a write to a connection the client already closed is dropped by Node, not thrown. */
function writeNodeResponse(res: ServerResponse, response: JsonResponse): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(response.status, response.headers);
  res.end(response.body);
}

/** Whether a request's connection comes from this machine. */
function isLoopback(req: IncomingMessage): boolean {
  const address = req.socket.remoteAddress ?? '';
  return address === '::1' || address === '127.0.0.1' || address === '::ffff:127.0.0.1';
}
