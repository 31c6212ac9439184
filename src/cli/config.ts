import type { EnvOf } from './env.js';

/**
 * The defaults of `payhooks serve` beyond the database's (`DATABASE_DEFAULTS` in store/database.ts): where it listens. The
 * environment reader (`PORT`, `HOST`) and the help text both take them from here.
 */
export const SERVICE_DEFAULTS = { port: 8787, host: '0.0.0.0' } as const satisfies { port: number; host: string };

/** The parsed, validated environment of `payhooks serve` (docs/configuration.md). */
export type ServiceEnv = EnvOf<'serve'>;
