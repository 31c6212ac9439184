import type { IncomingMessage, ServerResponse } from 'node:http';
import { JSON_CONTENT_TYPE } from '../../internal/error-response.js';

/**
 * One path the standalone service answers: declared, so that the server is a table of these rather than an
 * if-chain, and each route lives in a module of its own. `handle` answers its own failures; it never throws or
 * rejects (the server does not wait for it).
 */
export interface ServiceRoute {
  /** The path, e.g. `/healthz`; with `prefix`, also every path under it (`/admin`, `/admin/…`). */
  path: string;
  prefix?: boolean | undefined;
  handle(req: IncomingMessage, res: ServerResponse): void;
}

/**
 * Declares a route of the service (the style of the simulator's `defineRoute`).
 *
 * @example
 * const health = defineServiceRoute({ path: '/healthz', handle: (_req, res) => json(res, 200, { ok: true }) });
 */
export function defineServiceRoute(route: ServiceRoute): ServiceRoute {
  return route;
}

/** The route a request's path matches, or undefined. */
export function matchRoute(routes: readonly ServiceRoute[], path: string): ServiceRoute | undefined {
  return routes.find((route) => path === route.path || (route.prefix === true && path.startsWith(`${route.path}/`)));
}

/** Answers with a JSON body. */
export function json(res: ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'content-type': JSON_CONTENT_TYPE });
  res.end(JSON.stringify(body));
}
