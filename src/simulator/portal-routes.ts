import { randomBytes } from 'node:crypto';
import { authLinkInputSchema, customerPortalSessionInputSchema, signInUrlSchema } from '../events/rest-contract.js';
import type { SimulatorContext } from './context.js';
import { defineRoute, type Route } from './route.js';

/**
 * One-time customer sign-in links. The simulator makes well-formed URLs under its own base URL with a random
 * token; it does not serve a portal behind them.
 */
export function portalRoutes(ctx: SimulatorContext): Route[] {
  const token = () => randomBytes(24).toString('base64url');
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/customer-portal-session',
      operationId: 'createCustomerPortalSession',
      summary: 'A one-time URL that signs the customer into the customer portal at the destination (e.g. home).',
      tag: 'Auth',
      input: customerPortalSessionInputSchema,
      response: signInUrlSchema,
      errors: [400, 404],
      handle({ input, baseUrl }) {
        const customer = ctx.state.customer(input.customerId);
        const url = new URL(`/portal/${encodeURIComponent(input.destination)}`, baseUrl);
        url.searchParams.set('customer', customer.id);
        url.searchParams.set('token', token());
        return { status: 200, body: { url: url.href } };
      },
    }),
    defineRoute({
      method: 'POST',
      path: '/v1/auth-links',
      operationId: 'createAuthLink',
      summary: 'A one-time URL that signs the customer into the payment portal, then goes to `url` if given.',
      tag: 'Auth',
      input: authLinkInputSchema,
      response: signInUrlSchema,
      errors: [400, 404],
      handle({ input, baseUrl }) {
        const customer = ctx.state.customer(input.customerId);
        const url = new URL('/portal/auth', baseUrl);
        url.searchParams.set('customer', customer.id);
        url.searchParams.set('token', token());
        if (input.url) url.searchParams.set('redirect', input.url);
        return { status: 200, body: { url: url.href } };
      },
    }),
  ];
}
