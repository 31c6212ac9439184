import type { Registry } from 'prom-client';
import { defineServiceRoute, json, type ServiceRoute } from './service-route.js';

/** `/metrics`: the registry in Prometheus' text format. */
export function metricsRoute(registry: Registry): ServiceRoute {
  return defineServiceRoute({
    path: '/metrics',
    handle: (_req, res) => {
      registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(text);
        })
        .catch(() => json(res, 500, { error: { message: 'Metrics failed.' } }));
    },
  });
}
