import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, type Registry } from 'prom-client';
import { defineServiceRoute, json, type ServiceRoute } from './service-route.js';

/** Where the service receives webhooks. */
export const WEBHOOK_PATH = '/webhooks';

/**
 * `POST /webhooks`, counted by status in `payhooks_webhook_responses_total`. Without a receiver (`--role worker`),
 * a 404 that says where webhooks go instead.
 */
export function webhookRoute(
  receive: ((req: IncomingMessage, res: ServerResponse) => Promise<void>) | undefined,
  registry: Registry,
): ServiceRoute {
  const deliveries = new Counter({
    name: 'payhooks_webhook_responses_total',
    help: 'Webhook deliveries answered, by HTTP status.',
    labelNames: ['status'],
    registers: [registry],
  });
  return defineServiceRoute({
    path: WEBHOOK_PATH,
    handle: (req, res) => {
      if (!receive) {
        json(res, 404, {
          error: {
            message: 'This process runs with --role worker and receives no webhooks; send them to a process with --role receiver or all.',
          },
        });
        return;
      }
      res.on('finish', () => deliveries.inc({ status: String(res.statusCode) }));
      // The adapter answers its own failures (500) and logs them; its promise never rejects.
      void receive(req, res);
    },
  });
}
