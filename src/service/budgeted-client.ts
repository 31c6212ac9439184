import type { Logger } from 'pino';
import { type ApiClient, createClient, type RateLimiter } from '../client/index.js';
import type { PayhooksMetrics } from '../metrics/payhooks-metrics.js';
import type { PayhooksDatabase } from '../store/database.js';
import { createPostgresRateLimiter } from '../store/rate-budget.js';

/** An API client whose requests come out of the rate budget kept in the payhooks database. */
export interface BudgetedClient {
  api: ApiClient;
  /** Binds the budget to the opened database; requests before it fail. */
  bind(store: PayhooksDatabase): void;
}

/**
 * Makes the API client of `serve`, `backfill` and `reconcile`: built (and so checked) before the database opens,
 * so a bad key or URL stops the command with nothing opened, and taking its requests from the budget every
 * process on the database shares (the service allows 1,000 a minute per organization address).
 *
 * @example
 * const { api, bind } = budgetedClient({ apiKey, baseUrl, logger });
 * await withDatabase(env, async (store) => { bind(store); await reconcile({ store, api }); });
 */
export function budgetedClient(options: {
  apiKey: string;
  baseUrl: string | undefined;
  logger: Logger;
  /** Where the client's requests and rate-budget waits are counted (serve's /metrics). */
  metrics?: Pick<PayhooksMetrics, 'apiRequest' | 'rateLimitWait'> | undefined;
  /**
   * Whose budget it takes from: each account has its own (named by its id), so that one account's requests, and its
   * 429s, do not slow another's. Default `default`, the default account's. With its own limits, or the service's.
   */
  budget?: { name: string; requestsPerWindow?: number | undefined; windowMs?: number | undefined } | undefined;
}): BudgetedClient {
  let budget: RateLimiter | undefined;
  const api = createClient({
    apiKey: options.apiKey,
    baseUrl: options.baseUrl,
    logger: options.logger.child({ component: 'api-client' }),
    onRequest: options.metrics?.apiRequest,
    rateLimit: {
      acquire: async (signal) => {
        if (!budget) throw new Error('The API rate budget is used before the database is open.');
        const started = performance.now();
        await budget.acquire(signal);
        options.metrics?.rateLimitWait((performance.now() - started) / 1000);
      },
    },
  });
  return {
    api,
    bind(store) {
      budget = createPostgresRateLimiter(store, {
        budget: options.budget?.name,
        requestsPerWindow: options.budget?.requestsPerWindow,
        windowMs: options.budget?.windowMs,
      });
    },
  };
}
