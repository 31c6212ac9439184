import { existsSync } from 'node:fs';
import { PayhooksError } from '../errors.js';
import { describeDatabaseUrl } from '../internal/describe-url.js';
import { readPostgresMarker } from '../service/postgres-marker.js';
import type { Env } from '../service/environment.js';
import { DATABASE_DEFAULTS, openDatabase, type PayhooksDatabase } from '../store/database.js';
import { migrate, type MigrationReport } from '../store/migrate.js';
import { describeError, scrubbed } from './doctor-checks.js';
import { stdio } from './output.js';

/** The variables that say which database to open. */
export type DatabaseEnv = Pick<Env, 'DATABASE_URL' | 'PAYHOOKS_DATA_DIR' | 'PAYHOOKS_SCHEMA'>;

/** Options of {@link withDatabase}. */
export interface WithDatabaseOptions {
  /** The command exists to create the database (`migrate`): no note that the embedded one was just created. */
  createsDatabase?: boolean | undefined;
}

/**
 * Opens the database the environment names (no secret needed), migrates it, runs `work`, closes it. A server that
 * cannot be reached, a database that does not exist or a refused login fails with a message naming DATABASE_URL
 * (without its password) and `payhooks doctor`; opening the embedded database says on stderr when it was just
 * created, and when a serve in this folder uses PostgreSQL instead.
 *
 * @example
 * const rows = await withDatabase(ctx.env('events'), (store) => listEvents(store));
 */
export async function withDatabase<T>(
  env: DatabaseEnv,
  work: (store: PayhooksDatabase, migrated: MigrationReport) => Promise<T>,
  options: WithDatabaseOptions = {},
): Promise<T> {
  const dataDir = env.PAYHOOKS_DATA_DIR ?? DATABASE_DEFAULTS.dataDir;
  const embedded = !env.DATABASE_URL && !dataDir.startsWith('memory://');
  const existed = embedded && existsSync(dataDir);
  const store = await openDatabase({ url: env.DATABASE_URL, dataDir, schema: env.PAYHOOKS_SCHEMA });
  try {
    let migrated: MigrationReport;
    try {
      migrated = await migrate(store);
    } catch (err) {
      throw env.DATABASE_URL ? explainedDatabaseError(env.DATABASE_URL, err) : err;
    }
    if (embedded) await embeddedNotes(dataDir, existed || options.createsDatabase === true);
    return await work(store, migrated);
  } finally {
    await store.close();
  }
}

/** Says that the embedded database was just made (so it is empty), and which PostgreSQL a serve here uses. */
async function embeddedNotes(dataDir: string, existed: boolean): Promise<void> {
  const marker = readPostgresMarker(dataDir);
  const serveUses = marker
    ? `a payhooks serve started in this folder (process ${marker.pid}, ${marker.startedAt}) uses PostgreSQL at ${marker.database}: set DATABASE_URL to read it`
    : 'if your serve uses PostgreSQL, set DATABASE_URL to read its database';
  if (!existed) {
    await stdio().err.line(`payhooks: DATABASE_URL is not set, so a new, empty embedded database was created at ${dataDir}; ${serveUses}.`);
  } else if (marker) {
    await stdio().err.line(`payhooks: DATABASE_URL is not set, so this reads the embedded database at ${dataDir}; ${serveUses}.`);
  }
}

/** Error codes of a server that cannot be reached, a database that does not exist and a refused login. */
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ECONNRESET',
  '3D000',
  '28P01',
  '28000',
]);

function codeOf(err: unknown): string | undefined {
  if (err instanceof AggregateError && err.errors.length > 0 && !(err as { code?: unknown }).code) return codeOf(err.errors[0]);
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * The first contact's failure said with what to check: DATABASE_URL (shown without its password) and `payhooks
 * doctor`. Other errors (a migration refused, a statement failing) are returned as they are.
 */
function explainedDatabaseError(url: string, err: unknown): unknown {
  const code = codeOf(err);
  const timedOut =
    err instanceof Error && /timeout exceeded when trying to connect|Connection terminated due to connection timeout/i.test(err.message);
  if (err instanceof PayhooksError || (!timedOut && (code === undefined || !(CONNECTION_CODES.has(code) || code.startsWith('08')))))
    return err;
  let password: string | undefined;
  try {
    password = decodeURIComponent(new URL(url).password) || undefined;
  } catch {
    password = undefined;
  }
  const reason = scrubbed(describeError(err), [password, url]);
  return new PayhooksError(
    `cannot use the PostgreSQL database of DATABASE_URL (${describeDatabaseUrl(url)}): ${reason}. ` +
      "Check DATABASE_URL's host, port, user, password and database name; `payhooks doctor` checks them.",
    { cause: err },
  );
}
