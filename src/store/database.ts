import { mkdirSync } from 'node:fs';
import { within } from '../internal/within.js';
import { dirname } from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { lockDataDir, type ReleaseLock } from './data-dir-lock.js';
import { parseConnectionHosts } from './connection-hosts.js';
import { EvictingPool } from './evicting-pool.js';
import { failoverClient, HostRotation } from './failover-client.js';
import { PGliteDialect } from './pglite-dialect.js';
import { quoteIdent } from './quote-ident.js';
import { realDataDir } from './real-data-dir.js';
import type { PayhooksTables } from './schema.js';

/** Options of {@link openDatabase}. Defaults are {@link DATABASE_DEFAULTS}, which the standalone service uses too. */
export interface DatabaseOptions {
  /**
   * A PostgreSQL connection string. Unset: the embedded PGlite database under `dataDir`. Several hosts may be listed
   * as libpq lists them (`postgres://u@db1:5432,db2:5432/payhooks?target_session_attrs=read-write`, or the keyword
   * form `host=db1,db2 dbname=payhooks`): connections go to the one that accepts writes, and after a failover to the
   * new primary (see docs/deployment.md).
   */
  url?: string | undefined;
  /**
   * Where PGlite keeps its files; `memory://` keeps nothing. Default `./.payhooks/pgdata`. Locked by its real path,
   * so that one folder named two ways (a symbolic link, `..`) is still opened by one process at a time.
   */
  dataDir?: string | undefined;
  /** The Postgres schema that holds payhooks' tables, so they can share an app's database. Default `payhooks`. */
  schema?: string | undefined;
  /** Size of the pg connection pool. Default 10. */
  poolSize?: number | undefined;
  /** How long to wait for a pg connection before failing (so a dead server fails fast). Default 5000 ms. */
  connectionTimeoutMs?: number | undefined;
  /**
   * How long a query may go without an answer before it fails and its connection is discarded (with every
   * connection opened before it: see `discardConnections`); the server stops the statement 1 s later
   * (`statement_timeout`), so that it does not run on unseen. Raise it for handlers that run long statements in
   * `ctx.transaction`. Default 15000 ms.
   */
  queryTimeoutMs?: number | undefined;
  /** Called with errors of idle pool connections (a server restart), which would otherwise crash the process. */
  onIdleError?: ((error: Error) => void) | undefined;
}

/** A handle on the inbox's database: a Kysely instance bound to the payhooks schema, and LISTEN/NOTIFY. */
export interface PayhooksDatabase {
  readonly kind: 'postgres' | 'pglite';
  readonly schema: string;
  /** Kysely over the payhooks tables; table names are qualified with `schema`. */
  readonly db: Kysely<PayhooksTables>;
  /**
   * Condemns every open connection: each is destroyed instead of reused (in use ones when released). Call it when
   * the database stopped answering, so that service resumes on new connections as soon as it answers again.
   * A no-op on PGlite.
   */
  discardConnections(): void;
  /**
   * This database with a deadline (a `performance.now()` time) on every connection its `db` takes and every
   * statement it sends: waiting for a connection stops at the deadline, a statement is not sent past it, and one
   * still unanswered then fails (its connection is destroyed). Closing it closes nothing; close this one. PGlite,
   * which has no connections to wait for, ignores the deadline.
   *
   * @example
   * await storeEvents(store.withDeadline(performance.now() + 5000), events);
   */
  withDeadline(deadline: number): PayhooksDatabase;
  /** Runs `onNotify` for each NOTIFY on `channel`; resolves to an unsubscribe function. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

/**
 * The defaults of {@link DatabaseOptions}, in one place: `openDatabase` and the command line (`PAYHOOKS_DATA_DIR`,
 * `PAYHOOKS_SCHEMA`, and the help text) all read them from here.
 *
 * @example
 * openDatabase({ dataDir: DATABASE_DEFAULTS.dataDir }) // the same as openDatabase()
 */
export const DATABASE_DEFAULTS = {
  dataDir: './.payhooks/pgdata',
  schema: 'payhooks',
  poolSize: 10,
  connectionTimeoutMs: 5000,
  queryTimeoutMs: 15_000,
} as const satisfies Required<Pick<DatabaseOptions, 'dataDir' | 'schema' | 'poolSize' | 'connectionTimeoutMs' | 'queryTimeoutMs'>>;

/** How long close() waits for connections to end politely before cutting their sockets (a silent server). */
const CLOSE_GRACE_MS = 2000;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** True for a schema name payhooks accepts: lower-case letters, digits and underscores, at most 63 characters. */
export function isSchemaName(schema: string): boolean {
  return SCHEMA_NAME.test(schema);
}

/** Checks a schema name; it is spliced into SQL as an identifier, so only plain lower-case names pass. */
export function assertSchemaName(schema: string): void {
  if (!isSchemaName(schema)) {
    throw new TypeError(
      `Invalid schema name ${JSON.stringify(schema)}: use lower-case letters, digits and underscores, starting with a letter or underscore (at most 63 characters).`,
    );
  }
}

/**
 * Opens the inbox database: a pg Pool when `url` is set, embedded PGlite otherwise.
 *
 * @example
 * const store = await openDatabase({ url: process.env.DATABASE_URL });
 * await migrate(store);
 */
export async function openDatabase(options: DatabaseOptions = {}): Promise<PayhooksDatabase> {
  const schema = options.schema ?? DATABASE_DEFAULTS.schema;
  assertSchemaName(schema);
  return options.url ? openPostgres(options.url, schema, options) : openPGlite(options.dataDir ?? DATABASE_DEFAULTS.dataDir, schema);
}

/**
 * How long after the client gives up on a statement (`queryTimeoutMs`) the server stops it too: the client times out
 * first, as before, and discards the connection; the margin keeps the two from racing.
 */
const SERVER_STOP_MARGIN_MS = 1000;

/** The server's statement_timeout for a client query timeout (0, none: none either). */
function serverStatementTimeout(queryTimeoutMs: number): number {
  return queryTimeoutMs > 0 ? Math.ceil(queryTimeoutMs) + SERVER_STOP_MARGIN_MS : 0;
}

function openPostgres(url: string, schema: string, options: DatabaseOptions): PayhooksDatabase {
  const connectionTimeoutMillis = options.connectionTimeoutMs ?? DATABASE_DEFAULTS.connectionTimeoutMs;
  const queryTimeoutMs = options.queryTimeoutMs ?? DATABASE_DEFAULTS.queryTimeoutMs;
  const { hosts, targetSessionAttrs, connectionString } = parseConnectionHosts(url);
  // One host taking any session is what node-postgres does by itself; otherwise connections follow the primary.
  const rotation = hosts.length > 1 || targetSessionAttrs === 'read-write' ? new HostRotation(hosts) : undefined;
  const Client = rotation ? failoverClient(rotation, targetSessionAttrs) : pg.Client;
  const pool = new pg.Pool({
    connectionString,
    Client,
    max: options.poolSize ?? DATABASE_DEFAULTS.poolSize,
    connectionTimeoutMillis,
    query_timeout: queryTimeoutMs,
    // A peer that vanished without closing (a partition) is noticed by the kernel, not only by a query timing out.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  });
  pool.on('error', (error) => options.onIdleError?.(error));
  const clients = new Set<pg.PoolClient>();
  pool.on('connect', (client) => {
    clients.add(client);
    // A connection that drops while checked out emits 'error' on its client as well as failing the query;
    // without a listener that would crash the process. The failed query already reports the problem.
    client.on('error', () => undefined);
    // payhooks runs short statements only. Their estimated cost grows with the inbox (a claim joins it), and past
    // jit_above_cost each one spent about 20 ms compiling itself: measured, a drain fell from 8,000 to 4,000
    // events/s once the inbox held 1.3 million rows. Statements are prepared (prepared-statements.ts) to be parsed once,
    // but each is planned for its own values: a plan made once for any batch, which cannot know how many rows the
    // batch's arrays hold, joins them pair by pair (an outcome batch took half as long again that way). One query,
    // queued on the client, runs before its first.
    //
    // A statement the client timed out on keeps running on the server, whose backend does not look at the socket
    // meanwhile: a statement slow every time then opened connection after connection until the server had none
    // left (a claim planned badly ran for 4 minutes that way). statement_timeout stops it a moment after the client
    // gave up.
    client
      .query(`set jit = off; set plan_cache_mode = force_custom_plan; set statement_timeout = ${serverStatementTimeout(queryTimeoutMs)}`)
      .catch(() => undefined);
  });
  pool.on('remove', (client) => clients.delete(client));
  const evicting = new EvictingPool(pool, {
    connectAttempts: hosts.length,
    onConnectionFailure: (client) => rotation?.failed(client),
  });
  const base = new Kysely<PayhooksTables>({ dialect: new PostgresDialect({ pool: evicting }) });
  const listeners = new Set<pg.Client>();
  const handle: PayhooksDatabase = {
    kind: 'postgres',
    schema,
    db: base.withSchema(schema),
    discardConnections: () => evicting.discardAll(),
    withDeadline(deadline) {
      const bounded = new Kysely<PayhooksTables>({ dialect: new PostgresDialect({ pool: evicting.until(deadline) }) });
      return { ...handle, db: bounded.withSchema(schema), close: async () => undefined };
    },
    async listen(channel, onNotify) {
      // A dedicated connection: LISTEN belongs to a session, and pooled clients change hands. With several hosts it
      // goes to the primary (NOTIFY is not sent on standbys), trying each host once.
      const client = await connectListener(hosts.length, () => {
        const made = new Client({ connectionString, connectionTimeoutMillis, keepAlive: true, keepAliveInitialDelayMillis: 10_000 });
        made.on('error', (error) => options.onIdleError?.(error));
        return made;
      });
      listeners.add(client);
      client.on('notification', (message) => {
        if (message.channel === channel) onNotify(message.payload ?? '');
      });
      await client.query(`LISTEN ${quoteIdent(channel)}`);
      return async () => {
        listeners.delete(client);
        await endWithin(
          client.end().catch(() => undefined),
          [client],
        );
      };
    },
    async close() {
      await endWithin(base.destroy(), [...clients, ...listeners]);
    },
  };
  return handle;
}

/** Connects a new client, trying again on a failure up to `attempts` times in all (the next host each time). */
async function connectListener(attempts: number, make: () => pg.Client): Promise<pg.Client> {
  for (let attempt = 1; ; attempt += 1) {
    const client = make();
    try {
      await client.connect();
      return client;
    } catch (error) {
      if (attempt >= attempts) throw error;
    }
  }
}

/**
 * Waits for `ending` (connections closing politely), but not past a grace period: a server that went silent
 * never answers the goodbye, so the sockets are then cut, and close() returns in bounded time whatever the
 * network does.
 */
async function endWithin(ending: Promise<unknown>, clients: readonly (pg.Client | pg.PoolClient)[]): Promise<void> {
  if ((await within(ending, CLOSE_GRACE_MS)) === 'timeout') {
    for (const client of clients) (client as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  }
}

/** Makes the PGlite of a `memory://` database; see {@link setMemoryPGliteSource}. */
export type MemoryPGliteSource = (schema: string) => Promise<PGlite>;

let memoryPGliteSource: MemoryPGliteSource | undefined;

/**
 * Test-only: where the PGlite of a `memory://` database comes from (unset: `PGlite.create`). The test suite starts
 * each one from a data directory made once per run instead of running initdb every time, which is most of
 * PGlite's start-up (test/helpers/pglite-template.ts). Nothing in payhooks sets it; it is not exported by any entry.
 */
export function setMemoryPGliteSource(source: MemoryPGliteSource | undefined): void {
  memoryPGliteSource = source;
}

async function openPGlite(dataDir: string, schema: string): Promise<PayhooksDatabase> {
  const inMemory = dataDir.startsWith('memory://');
  // One name for the folder, whichever it was given by (a symbolic link, `..`): the lock is keyed by it, and PGlite
  // opens the folder the lock was taken for.
  const folder = inMemory ? dataDir : realDataDir(dataDir);
  let unlock: ReleaseLock = async () => {};
  if (!inMemory) {
    mkdirSync(dirname(folder), { recursive: true });
    unlock = await lockDataDir(folder);
  }
  let pglite: PGlite;
  try {
    pglite = inMemory && memoryPGliteSource ? await memoryPGliteSource(schema) : await PGlite.create(folder);
  } catch (err) {
    await unlock();
    throw err;
  }
  const base = new Kysely<PayhooksTables>({ dialect: new PGliteDialect(pglite) });
  const handle: PayhooksDatabase = {
    kind: 'pglite',
    schema,
    db: base.withSchema(schema),
    discardConnections: () => undefined,
    withDeadline: () => handle,
    async listen(channel, onNotify) {
      const unlisten = await pglite.listen(channel, onNotify);
      return async () => {
        if (!pglite.closed) await unlisten();
      };
    },
    async close() {
      await base.destroy();
      await unlock();
    },
  };
  return handle;
}
