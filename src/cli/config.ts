import { z } from 'zod';
import { parseSecretList } from '../signature/index.js';

/** The environment of `payhooks serve` (docs/configuration.md, "Environment of payhooks serve"). */
export const serviceEnvSchema = z.object({
  PAYHOOKS_WEBHOOK_SECRET: z.string().transform(parseSecretList).optional(),
  DATABASE_URL: z.string().trim().min(1).optional().catch(undefined),
  PAYHOOKS_DATA_DIR: z.string().min(1).default('./.payhooks/pgdata'),
  PAYHOOKS_SCHEMA: z.string().default('payhooks'),
  /** A directory of the app's own numbered SQL migrations, applied at start after payhooks' own. */
  PAYHOOKS_APP_MIGRATIONS: z.string().trim().min(1).optional().catch(undefined),
  /** The schema of the app's own tables (default public, set in createPayhooks). */
  PAYHOOKS_APP_SCHEMA: z.string().trim().min(1).optional().catch(undefined),
  PAYHOOKS_API_KEY: z.string().trim().min(1).optional().catch(undefined),
  PAYHOOKS_API_URL: z.string().url('PAYHOOKS_API_URL must be a URL.').optional(),
  PORT: z.coerce.number({ error: 'PORT must be a number.' }).int().min(0).max(65535).default(8787),
  HOST: z.string().default('0.0.0.0'),
});

/** The parsed, validated environment of the standalone service. */
export type ServiceEnv = z.infer<typeof serviceEnvSchema>;

/** Reads and validates the service environment; throws one error that lists every problem. */
export function readServiceEnv(env: NodeJS.ProcessEnv = process.env): ServiceEnv {
  const parsed = serviceEnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new Error(`Invalid environment:\n${parsed.error.issues.map((issue) => `  - ${issue.message}`).join('\n')}`);
  }
  return parsed.data;
}
