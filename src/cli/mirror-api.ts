import { createLogger } from '../logger.js';
import { type BudgetedClient, budgetedClient } from '../service/budgeted-client.js';
import type { EnvOf } from '../service/environment.js';
import { withSimulatorSessionApi } from '../service/session-env.js';
import { MIRROR_DEFAULTS } from '../sync/mirror/mirror-sink.js';
import { UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';

/** The commands that compare or fill the mirror from the service's API. */
type MirrorCommand = 'backfill' | 'verify';

/**
 * What `backfill` and `verify` start from: their environment, the mirror's schema and an API client on the shared
 * rate budget, checked before the database opens (no secret key: a usage error saying which variables to set).
 * With neither `PAYHOOKS_API_KEY` nor `PAYHOOKS_API_URL` set, a live simulator session (`.payhooks/simulator.json`,
 * which `payhooks simulate --forward-to` writes and `serve` reads) is the API, as it is for `serve`; a line on
 * stderr says so.
 *
 * @example
 * const { env, mirrorSchema, api, bind } = await mirrorApi(ctx, 'verify');
 */
export async function mirrorApi<C extends MirrorCommand>(
  ctx: CommandContext,
  command: C,
): Promise<BudgetedClient & { env: EnvOf<C>; mirrorSchema: string }> {
  const env = await withSimulatorSessionApi(ctx.env(command) as EnvOf<'backfill'> & EnvOf<'verify'>, {
    info: (message) => void ctx.err(message),
    warn: (message) => void ctx.err(`warning: ${message}`),
  });
  if (!env.PAYHOOKS_API_KEY) {
    throw new UsageError(
      `PAYHOOKS_API_KEY is not set: ${command} reads the service's API and needs the organization's secret key (sk_…), ` +
        "with PAYHOOKS_API_URL set to the service's base URL (or, against the simulator, a running payhooks simulate --forward-to URL in this folder).",
    );
  }
  const client = budgetedClient({
    apiKey: env.PAYHOOKS_API_KEY,
    baseUrl: env.PAYHOOKS_API_URL,
    logger: createLogger({ level: env.PAYHOOKS_LOG_LEVEL }),
  });
  return { ...client, env: env as EnvOf<C>, mirrorSchema: env.PAYHOOKS_MIRROR_SCHEMA ?? MIRROR_DEFAULTS.schema };
}
