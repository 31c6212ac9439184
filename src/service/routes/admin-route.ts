import type { IncomingMessage, ServerResponse } from 'node:http';
import { defineServiceRoute, type ServiceRoute } from './service-route.js';

/**
 * `/admin` and everything under it: the operator console. Off (no route), `/admin…` falls through to the 404 that
 * says nothing about a console.
 */
export function adminRoute(admin: (req: IncomingMessage, res: ServerResponse) => Promise<void>): ServiceRoute {
  return defineServiceRoute({
    path: '/admin',
    prefix: true,
    // Like the webhook adapter: it answers its own failures, reads a body only once the token is checked, and its
    // promise never rejects, also when the client resets the connection mid-body.
    handle: (req, res) => void admin(req, res),
  });
}
