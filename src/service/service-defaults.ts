import type { EnvOf } from './environment.js';

/**
 * The defaults of `payhooks serve` beyond the database's (`DATABASE_DEFAULTS` in store/database.ts): where it listens. The
 * environment reader (`PORT`, `HOST`) and the help text both take them from here.
 */
export const SERVICE_DEFAULTS = {
  port: 8787,
  host: '0.0.0.0',
  /** A client has this long to send its request headers. */
  headersTimeoutMs: 10_000,
  /** And this long for the whole request, body included: a body trickled at a byte a second is cut off. */
  requestTimeoutMs: 15_000,
  /** Open connections at once; more are dropped as they arrive (the file descriptors of the process are finite). */
  maxConnections: 8192,
} as const satisfies { port: number; host: string; headersTimeoutMs: number; requestTimeoutMs: number; maxConnections: number };

/** The parsed, validated environment of `payhooks serve` (docs/configuration.md). */
export type ServiceEnv = EnvOf<'serve'>;
