// @ts-check
// A connector: syncs each customer and invoice to your CRM's HTTP API. payhooks.config.mjs hands it to
// `payhooks serve`, which records its completion per event, retries it with backoff, and keeps what it cannot do
// as dead events for `payhooks replay` (node_modules/payhooks/docs/sinks.md#connectors).
import { defineConnector } from 'payhooks';

const baseUrl = process.env.CRM_URL;
if (!baseUrl) throw new Error('Set CRM_URL to your CRM API base URL (e.g. https://crm.example.com/api).');

export const crmConnector = defineConnector({
  // Completion is recorded under connector:crm: keep the name when the code changes.
  name: 'crm',
  events: ['CUSTOMER_CREATED', 'CUSTOMER_UPDATED', 'INVOICE_CREATED', 'INVOICE_PAID', 'INVOICE_CANCELED'],
  async handle(_event, ctx) {
    // The resource as it is now (through the API with PAYHOOKS_API_KEY, else the mirror or the event itself), so a
    // late or repeated event never writes stale data.
    const resource = await ctx.currentState();
    if (!resource) return;
    // TODO: map the service's fields to your CRM's. 5xx, 408, 429 and network errors are retried (Retry-After is
    // honoured); any other 4xx puts the event in dead letters with the CRM's answer.
    await ctx.http.request(`${baseUrl}/${resource.kind}s/${resource.id}`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${process.env.CRM_TOKEN ?? ''}`,
        // The same for every retry of this event: a CRM that supports idempotency keys applies it once.
        'idempotency-key': ctx.idempotencyKey,
      },
      json: resource.state,
    });
  },
});
