import { createLogger } from '../logger.js';
import { type BudgetedClient, budgetedClient } from '../service/budgeted-client.js';
import type { EnvOf } from '../service/environment.js';
import { MIRROR_DEFAULTS } from '../sync/mirror/mirror-sink.js';
import { UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';

/** The commands that compare or fill the mirror from the service's API. */
type MirrorCommand = 'backfill' | 'verify';

/**
 * What `backfill` and `verify` start from: their environment, the mirror's schema and an API client on the shared
 * rate budget, checked before the database opens (no secret key: a usage error saying which variables to set).
 *
 * @example
 * const { env, mirrorSchema, api, bind } = mirrorApi(ctx, 'verify');
 */
export function mirrorApi<C extends MirrorCommand>(
  ctx: CommandContext,
  command: C,
): BudgetedClient & { env: EnvOf<C>; mirrorSchema: string } {
  const env = ctx.env(command) as EnvOf<'backfill'> & EnvOf<'verify'>;
  if (!env.PAYHOOKS_API_KEY) {
    throw new UsageError(
      `PAYHOOKS_API_KEY is not set: ${command} reads the service's API and needs the organization's secret key (sk_…), ` +
        "with PAYHOOKS_API_URL set to the service's base URL.",
    );
  }
  const client = budgetedClient({
    apiKey: env.PAYHOOKS_API_KEY,
    baseUrl: env.PAYHOOKS_API_URL,
    logger: createLogger({ level: env.PAYHOOKS_LOG_LEVEL }),
  });
  return { ...client, env: env as EnvOf<C>, mirrorSchema: env.PAYHOOKS_MIRROR_SCHEMA ?? MIRROR_DEFAULTS.schema };
}
