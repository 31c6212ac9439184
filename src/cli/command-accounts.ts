import type { ApiClient } from '../client/api-client.js';
import { createLogger } from '../logger.js';
import { budgetedClient } from '../service/budgeted-client.js';
import type { EnvOf } from '../service/environment.js';
import { withSimulatorSessionApi } from '../service/session-env.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import type { PayhooksDatabase } from '../store/database.js';
import { resolveAccounts } from '../sync/accounts-config.js';
import { loadSyncConfig, type SyncConfig } from '../sync/config.js';
import { MIRROR_DEFAULTS } from '../sync/mirror/mirror-sink.js';
import { UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';

/** The commands that read the service's API for one account at a time. */
export type AccountCommand = 'backfill' | 'verify' | 'reconcile';

/** One account a command runs for: its id and an API client with its key, its URL and its own rate budget. */
export interface CommandAccount {
  id: string;
  api: ApiClient;
}

/** What {@link commandAccounts} found: the accounts to run for, in order, and what the command also needs. */
export interface CommandAccounts<C extends AccountCommand> {
  env: EnvOf<C>;
  sync: SyncConfig;
  mirrorSchema: string;
  /** Whether the configuration names its accounts: then each account's output is headed by its id. */
  named: boolean;
  /** Every configured account's id, picked or not (what the mirror's accounts table is kept in step with). */
  configured: string[];
  accounts: CommandAccount[];
  /** Binds every account's rate budget to the opened database. */
  bind(store: PayhooksDatabase): void;
}

/**
 * The accounts `backfill`, `verify` and `reconcile` run for, each with its own API client: the configuration file's
 * `accounts` (their keys read from where the file says), or without them the one default account of
 * `PAYHOOKS_API_KEY` and `PAYHOOKS_API_URL` (a live simulator session standing in for both, as for `serve`). `only`
 * (`--account`) picks one; an account that is not configured, or has no API key, is a usage error naming the
 * configured ones, before the database opens.
 *
 * @example
 * const { env, accounts, bind } = await commandAccounts(ctx, 'verify', opts.account);
 */
export async function commandAccounts<C extends AccountCommand>(
  ctx: CommandContext,
  command: C,
  only: string | undefined,
): Promise<CommandAccounts<C>> {
  const env = await withSimulatorSessionApi(ctx.env(command) as EnvOf<'backfill'> & EnvOf<'verify'>, {
    info: (message) => void ctx.err(message),
    warn: (message) => void ctx.err(`warning: ${message}`),
  });
  const sync = await loadSyncConfig({ explicitPath: env.PAYHOOKS_CONFIG, mirrorSchema: env.PAYHOOKS_MIRROR_SCHEMA });
  const configured = configuredAccounts(sync, env, command);
  const picked = only === undefined ? configured : configured.filter((account) => account.id === only);
  if (picked.length === 0) {
    throw new UsageError(
      `--account ${only} is not configured: the configured accounts are ${configured.map((account) => account.id).join(', ')}.`,
    );
  }
  const logger = createLogger({ level: env.PAYHOOKS_LOG_LEVEL });
  const clients = picked.map((account) => {
    if (!account.apiKey) {
      throw new UsageError(
        account.id === DEFAULT_ACCOUNT && !sync.accounts
          ? `PAYHOOKS_API_KEY is not set: ${command} reads the service's ${command === 'reconcile' ? 'delivery history' : 'API'} and needs the organization's secret key (sk_…), ` +
              "with PAYHOOKS_API_URL set to the service's base URL (or, against the simulator, a running payhooks simulate --forward-to URL in this folder)."
          : `The account ${account.id} has no apiKey in the configuration: ${command} reads its API with its own key.`,
      );
    }
    return {
      id: account.id,
      client: budgetedClient({
        apiKey: account.apiKey,
        baseUrl: account.apiUrl ?? env.PAYHOOKS_API_URL,
        logger: logger.child({ account: account.id }),
        budget: { name: account.id, ...account.rateBudget },
      }),
    };
  });
  return {
    env: env as EnvOf<C>,
    sync,
    mirrorSchema: env.PAYHOOKS_MIRROR_SCHEMA ?? sync.mirror.schema ?? MIRROR_DEFAULTS.schema,
    named: sync.accounts !== undefined,
    configured: configured.map((account) => account.id),
    accounts: clients.map(({ id, client }) => ({ id, api: client.api })),
    bind(store) {
      for (const { client } of clients) client.bind(store);
    },
  };
}

interface ConfiguredAccount {
  id: string;
  apiKey?: string | undefined;
  apiUrl?: string | undefined;
  rateBudget?: { requestsPerWindow?: number | undefined; windowMs?: number | undefined } | undefined;
}

function configuredAccounts(sync: SyncConfig, env: EnvOf<'backfill'>, command: AccountCommand): ConfiguredAccount[] {
  if (!sync.accounts) return [{ id: DEFAULT_ACCOUNT, apiKey: env.PAYHOOKS_API_KEY, apiUrl: env.PAYHOOKS_API_URL }];
  const { accounts, problems } = resolveAccounts(sync.accounts, { env: process.env, cwd: process.cwd() });
  // Only the keys are needed here: a webhook secret that cannot be read is serve's problem, not this command's.
  const keyProblems = problems.filter((problem) => / apiKey: /.test(problem));
  if (keyProblems.length) throw new UsageError(`${command} cannot read the accounts' API keys:\n  - ${keyProblems.join('\n  - ')}`);
  return accounts;
}
