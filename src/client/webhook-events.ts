import {
  webhookEventRecordSchema,
  webhookEventsQuerySchema,
  type ListPage,
  type WebhookEventRecord,
  type WebhookEventsQuery,
} from '../events/rest-contract.js';
import { ApiResource } from './api-resource.js';
import type { RequestOptions } from './http-transport.js';
import { iteratePages } from './pagination.js';

/** Webhook delivery history: `GET /v1/webhook-events` and `POST /v1/webhook-events/{id}/retry` (spec). */
export class WebhookEvents extends ApiResource {
  /** One page of delivery records; `take` 1 to 100, filters assumed (`eventId`, `endpointId`, `status`). */
  async list(query: WebhookEventsQuery = {}, options?: RequestOptions): Promise<ListPage<WebhookEventRecord>> {
    return this.transport.list(this.basePath, webhookEventRecordSchema, { schema: webhookEventsQuerySchema, value: query }, options);
  }

  /** Every delivery record matching the filters, 100 per request. */
  iterate(query: Omit<WebhookEventsQuery, 'take'> = {}, options?: RequestOptions): AsyncGenerator<WebhookEventRecord, void, undefined> {
    return iteratePages((page) => this.list({ ...query, ...page }, options), query.skip);
  }

  /** Sends a delivery again (no body); resolves to the record (response shape assumed). */
  async retry(webhookEventId: string, options?: RequestOptions): Promise<WebhookEventRecord> {
    return this.transport.post(this.at(webhookEventId, 'retry'), undefined, webhookEventRecordSchema, options);
  }
}
