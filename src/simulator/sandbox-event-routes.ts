import { listPageSchema, pageQuerySchema } from '../events/rest-contract.js';
import type { SimulatorContext } from './context.js';
import { page } from './paging.js';
import { defineRoute, type Route } from './route.js';
import { sandboxEventSchema } from './sandbox-contract.js';

/**
 * Simulator only: `GET /v1/sandbox/events`, every event the simulator emitted, oldest first, whether or not an
 * endpoint was subscribed to it (the delivery history, `GET /v1/webhook-events`, lists only deliveries). `total`
 * before and a page from `skip=total` after a run of calls give exactly the events those calls caused.
 */
export function sandboxEventRoutes(ctx: SimulatorContext): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/sandbox/events',
      operationId: 'listSandboxEvents',
      summary:
        'Simulator only (assumed, not in the spec): every event emitted so far, {eventId, eventType, data}, oldest first, subscribed to or not.',
      tag: 'Sandbox',
      stagingOnly: true,
      query: pageQuerySchema,
      response: listPageSchema(sandboxEventSchema),
      errors: [400, 403],
      handle: ({ query }) => ({ status: 200, body: page(ctx.events(), query) }),
    }),
  ];
}
