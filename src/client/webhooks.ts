import {
  createWebhookInputSchema,
  pageQuerySchema,
  rotatedWebhookSecretSchema,
  webhookEndpointSchema,
  webhookSecretSchema,
  type CreateWebhookInput,
  type ListPage,
  type PageQuery,
  type RotatedWebhookSecret,
  type WebhookEndpoint,
  type WebhookSecret,
} from '../events/rest-contract.js';
import { ApiResource } from './api-resource.js';
import type { RequestOptions } from './http-transport.js';
import { iteratePages } from './pagination.js';

/** Webhook endpoints: create, read and rotate the signing secret (spec); list them (assumed path). */
export class Webhooks extends ApiResource {
  /**
   * Creates an endpoint. The URL must be https (http only for localhost / 127.0.0.1) and every event type
   * known; both are checked before any request.
   *
   * @example
   * const endpoint = await client.webhooks.create({ url: 'https://example.com/webhooks', description: 'sync', enabledEvents: ['INVOICE_PAID', 'PAYMENT_COMPLETED'] });
   * const { secret } = await client.webhooks.getSecret(endpoint.id);
   */
  async create(input: CreateWebhookInput, options?: RequestOptions): Promise<WebhookEndpoint> {
    return this.transport.post(this.basePath, { schema: createWebhookInputSchema, value: input }, webhookEndpointSchema, options);
  }

  /**
   * One page of endpoints, oldest first, never with their secrets (assumed path `GET /v1/webhooks`: the spec
   * shows no list); `take` 1 to 100.
   *
   * @example
   * const { data } = await client.webhooks.list();
   * const mine = data.find((endpoint) => endpoint.url === 'https://example.com/webhooks');
   */
  async list(query: PageQuery = {}, options?: RequestOptions): Promise<ListPage<WebhookEndpoint>> {
    return this.transport.list(this.basePath, webhookEndpointSchema, { schema: pageQuerySchema, value: query }, options);
  }

  /** Every endpoint from `skip` on, 100 per request. */
  iterate(query: Omit<PageQuery, 'take'> = {}, options?: RequestOptions): AsyncGenerator<WebhookEndpoint, void, undefined> {
    return iteratePages((page) => this.list(page, options), query.skip);
  }

  /** Reads the endpoint's signing secret (`GET /v1/webhooks/{id}/secret`). */
  async getSecret(webhookId: string, options?: RequestOptions): Promise<WebhookSecret> {
    return this.transport.get(this.at(webhookId, 'secret'), webhookSecretSchema, options);
  }

  /** Replaces the signing secret (`POST /v1/webhooks/{id}/secret/rotate`, no body). Keep accepting the old one until it expires. */
  async rotateSecret(webhookId: string, options?: RequestOptions): Promise<RotatedWebhookSecret> {
    return this.transport.post(this.at(webhookId, 'secret', 'rotate'), undefined, rotatedWebhookSecretSchema, options);
  }
}
