import type { Logger } from 'pino';
import type { ApiClient } from '../client/index.js';
import type { PayhooksMetrics } from '../metrics/payhooks-metrics.js';
import type { PayhooksAccount } from '../payhooks.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import type { PayhooksDatabase } from '../store/database.js';
import { type BudgetedClient, budgetedClient } from './budgeted-client.js';
import type { ServiceConfig } from './service-config.js';

/** One account as the service runs it: its credentials, and its API client with a rate budget of its own. */
export interface ServiceAccount {
  id: string;
  secrets: string[];
  workerShare: number;
  /** Undefined without an API key: its handlers get no `ctx.api`. */
  client: BudgetedClient | undefined;
}

/**
 * The accounts of a resolved configuration, each with its API client: the file's `accounts`, or without them the one
 * default account of `PAYHOOKS_WEBHOOK_SECRET`, `PAYHOOKS_API_KEY` and `PAYHOOKS_API_URL` (as before accounts existed).
 * The clients are built, and so checked, before the database opens; `bind` them once it has.
 */
export function serviceAccounts(
  config: Pick<ServiceConfig, 'accounts' | 'receiver' | 'api'>,
  options: { logger: Logger; metrics?: Pick<PayhooksMetrics, 'apiRequest' | 'rateLimitWait'> | undefined },
): ServiceAccount[] {
  const configured = config.accounts.length
    ? config.accounts
    : [{ id: DEFAULT_ACCOUNT, secrets: config.receiver.secrets ?? [], apiKey: config.api.key, apiUrl: config.api.url, workerShare: 1 }];
  return configured.map((account) => ({
    id: account.id,
    secrets: account.secrets,
    workerShare: account.workerShare,
    client:
      account.apiKey === undefined
        ? undefined
        : budgetedClient({
            apiKey: account.apiKey,
            baseUrl: account.apiUrl,
            logger: options.logger.child({ account: account.id }),
            metrics: options.metrics,
            budget: { name: account.id, ...('rateBudget' in account ? account.rateBudget : {}) },
          }),
  }));
}

/** What `createPayhooks` takes of the service's accounts: ids, secrets, API clients and shares. */
export function payhooksAccounts(accounts: readonly ServiceAccount[]): PayhooksAccount<ApiClient>[] {
  return accounts.map((account) => ({
    id: account.id,
    // A worker-only process has no secrets to give: the receiver that would need them is not started.
    secret: account.secrets.length ? account.secrets : undefined,
    api: account.client?.api,
    workerShare: account.workerShare,
  }));
}

/**
 * The accounts that periodic reconciliation and the gap sweeper read, each through its own API client, against its
 * own events and mirror rows (docs/accounts.md#operators): those with an API key; one without has nothing to compare.
 */
export function sweptAccounts(accounts: readonly ServiceAccount[]): { id: string; api: ApiClient }[] {
  return accounts.flatMap((account) => (account.client ? [{ id: account.id, api: account.client.api }] : []));
}

/** Binds every account's rate budget to the opened database. */
export function bindAccountBudgets(accounts: readonly ServiceAccount[], store: PayhooksDatabase): void {
  for (const account of accounts) account.client?.bind(store);
}
