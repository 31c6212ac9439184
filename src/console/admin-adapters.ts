import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request as ExpressRequest, RequestHandler } from 'express';
import { errorResponse } from '../internal/error-response.js';
import type { AdminApi } from './admin-api.js';

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
 * A `node:http` handler around the console's API; mount it where requests to `/admin/api/…` arrive. Its promise
 * never rejects.
 *
 * @example
 * if (req.url?.startsWith('/admin')) return adminNodeHandler(admin)(req, res);
 */
export function adminNodeHandler(api: AdminApi): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    const body = req.method === 'POST' ? await readSmallBody(req) : '';
    const response =
      body === undefined
        ? errorResponse(413, `The body is larger than ${MAX_ADMIN_BODY_BYTES} bytes.`)
        : await api.handle({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body, fromLoopback: isLoopback(req) });
    res.writeHead(response.status, response.headers);
    res.end(response.body);
  };
}

/**
 * Express 5 middleware around the console's API, mounted at any path (it answers by the original URL). A body a
 * JSON parser already read is taken from `req.body`.
 *
 * @example
 * app.use('/admin/api', adminExpressHandler(api));
 */
export function adminExpressHandler(api: AdminApi): RequestHandler {
  return (req: ExpressRequest, res, next) => {
    const parsed: unknown = req.body;
    const run = async () => {
      const body =
        req.method !== 'POST'
          ? ''
          : parsed === undefined
            ? await readSmallBody(req)
            : typeof parsed === 'string'
              ? parsed
              : JSON.stringify(parsed);
      const response =
        body === undefined
          ? errorResponse(413, `The body is larger than ${MAX_ADMIN_BODY_BYTES} bytes.`)
          : await api.handle({ method: req.method, url: req.originalUrl, headers: req.headers, body, fromLoopback: isLoopback(req) });
      res.writeHead(response.status, response.headers);
      res.end(response.body);
    };
    run().catch(next);
  };
}

/**
 * A Fetch-API handler around the console's API (Hono, Next.js route handlers, Bun, Deno).
 *
 * @example
 * app.all('/admin/api/*', (c) => adminFetch(c.req.raw));
 */
export function adminFetchHandler(api: AdminApi): (request: Request) => Promise<Response> {
  return async (request) => {
    const url = new URL(request.url);
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    const body = request.method === 'POST' ? await request.text() : '';
    const response =
      body.length > MAX_ADMIN_BODY_BYTES
        ? errorResponse(413, `The body is larger than ${MAX_ADMIN_BODY_BYTES} bytes.`)
        : await api.handle({ method: request.method, url: `${url.pathname}${url.search}`, headers, body });
    return new Response(response.body, { status: response.status, headers: response.headers });
  };
}

/** The body as text, or undefined past the limit (the rest is not read). */
async function readSmallBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_ADMIN_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Whether a request's connection comes from this machine. */
function isLoopback(req: IncomingMessage): boolean {
  const address = req.socket.remoteAddress ?? '';
  return address === '::1' || address === '127.0.0.1' || address === '::ffff:127.0.0.1';
}
