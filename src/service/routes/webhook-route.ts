import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, type Registry } from 'prom-client';
import { defineServiceRoute, json, type ServiceRoute } from './service-route.js';

/** Where the service receives webhooks: the default account's here, each account's at `/webhooks/{account}`. */
export const WEBHOOK_PATH = '/webhooks';

/**
 * The account a request to the webhook route is for: none (the default account) at `/webhooks`, `gym-north` at
 * `/webhooks/gym-north`. Anything longer names no account, and is answered as an unknown one.
 */
export function webhookAccount(request: { url: string }): string | undefined {
  const path = request.url.split('?', 1)[0] ?? '';
  if (path === WEBHOOK_PATH || path === `${WEBHOOK_PATH}/`) return undefined;
  const rest = path.slice(WEBHOOK_PATH.length + 1);
  try {
    return decodeURIComponent(rest);
  } catch {
    return rest;
  }
}

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
    prefix: true,
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
