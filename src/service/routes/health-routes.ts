import { databaseAnswers } from '../../store/database-answers.js';
import type { PayhooksDatabase } from '../../store/database.js';
import { defineServiceRoute, json, type ServiceRoute } from './service-route.js';

/** How long readiness waits for `select 1`; a probe must answer well within a supervisor's timeout. */
export const READINESS_TIMEOUT_MS = 2000;

/** `/healthz` (the process answers) and `/readyz` (and its database does, within {@link READINESS_TIMEOUT_MS}). */
export function healthRoutes(store: PayhooksDatabase): ServiceRoute[] {
  return [
    defineServiceRoute({ path: '/healthz', handle: (_req, res) => json(res, 200, { ok: true }) }),
    defineServiceRoute({
      path: '/readyz',
      handle: (_req, res) =>
        void databaseAnswers(store, READINESS_TIMEOUT_MS).then((ready) =>
          ready ? json(res, 200, { ready: true }) : json(res, 503, { ready: false, error: { message: 'The database does not answer.' } }),
        ),
    }),
  ];
}
