import {
  createWebhookInputSchema,
  listPageSchema,
  pageQuerySchema,
  rotatedWebhookSecretSchema,
  webhookEndpointSchema,
  webhookEventRecordSchema,
  webhookEventsQuerySchema,
  webhookSecretSchema,
} from '../events/rest-contract.js';
import { notFound } from './route-error.js';
import type { SimulatorContext } from './context.js';
import { newId, newSecret } from './ids.js';
import { page } from './paging.js';
import { defineRoute, type Route } from './route.js';
import { endpointView, type SimWebhookEndpoint } from './state.js';

/**
 * Webhook endpoints and their secrets, the delivery history and its manual retry (in the spec's table), and the
 * list of endpoints (assumed: `GET /v1/webhooks`, so a lost endpoint id can be found again).
 */
export function webhookRoutes(ctx: SimulatorContext): Route[] {
  const { state, deliveries, options } = ctx;
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/webhooks',
      operationId: 'createWebhookEndpoint',
      summary: 'Register a webhook endpoint (https, or http on localhost / 127.0.0.1) for the listed event types.',
      tag: 'Webhooks',
      input: createWebhookInputSchema,
      response: webhookEndpointSchema,
      errors: [400],
      handle({ input }) {
        const endpoint: SimWebhookEndpoint = {
          id: newId('we'),
          url: input.url,
          description: input.description,
          enabledEvents: [...new Set(input.enabledEvents)],
          createdAt: ctx.clock.iso(),
          secret: newSecret(),
          previousSecret: null,
        };
        state.endpoints.set(endpoint.id, endpoint);
        return { status: 200, body: endpointView(endpoint) };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/webhooks',
      operationId: 'listWebhookEndpoints',
      summary: 'List webhook endpoints, oldest first, without their secrets (assumed path: the spec shows no list of endpoints).',
      tag: 'Webhooks',
      query: pageQuerySchema,
      response: listPageSchema(webhookEndpointSchema),
      errors: [400],
      handle: ({ query }) => ({ status: 200, body: page([...state.endpoints.values()].map(endpointView), query) }),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/webhooks/{id}/secret',
      operationId: 'getWebhookSecret',
      summary: 'Read the signing secret of an endpoint.',
      tag: 'Webhooks',
      response: webhookSecretSchema,
      errors: [404],
      handle: ({ params }) => ({ status: 200, body: { secret: state.endpoint(params.id!).secret } }),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/webhooks/{id}/secret/rotate',
      operationId: 'rotateWebhookSecret',
      summary: 'Replace the signing secret; the previous one keeps signing (beside the new one) for a grace period.',
      tag: 'Webhooks',
      response: rotatedWebhookSecretSchema,
      errors: [404],
      handle({ params }) {
        const endpoint = state.endpoint(params.id!);
        // A manual clock plays the real durations; only the real clock is sped up by timeScale.
        const graceMs = ctx.clock.mode === 'manual' ? options.rotationGraceMs : options.rotationGraceMs / options.timeScale;
        endpoint.previousSecret = graceMs > 0 ? { secret: endpoint.secret, expiresAt: ctx.clock.now() + graceMs } : null;
        endpoint.secret = newSecret();
        const expiresAt = endpoint.previousSecret ? new Date(endpoint.previousSecret.expiresAt).toISOString() : null;
        return { status: 200, body: { secret: endpoint.secret, previousSecretExpiresAt: expiresAt } };
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/webhook-events',
      operationId: 'listWebhookEvents',
      summary: 'The delivery history: one record per event and endpoint, oldest first, with every attempt.',
      tag: 'Webhooks',
      query: webhookEventsQuerySchema,
      response: listPageSchema(webhookEventRecordSchema),
      errors: [400],
      // The queue is shared by every organization: each sees the records of its own endpoints only.
      handle: ({ query }) => ({
        status: 200,
        body: page(
          deliveries.list(query).filter((record) => state.endpoints.has(record.endpointId)),
          query,
        ),
      }),
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/webhook-events/{id}/retry',
      operationId: 'retryWebhookEvent',
      summary: 'Send a webhook event record once more, now; answers the record after the attempt.',
      tag: 'Webhooks',
      response: webhookEventRecordSchema,
      errors: [404],
      async handle({ params }) {
        const own = deliveries.get(params.id!);
        // Another organization's record is not there for this one, as the service answers.
        if (!own || !state.endpoints.has(own.endpointId)) throw notFound('webhook event', params.id!);
        const record = await deliveries.retryNow(params.id!);
        if (!record) throw notFound('webhook event', params.id!);
        return { status: 200, body: record };
      },
    }),
  ];
}
