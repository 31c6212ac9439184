import type { PGlite, Results } from '@electric-sql/pglite';
import {
  CompiledQuery,
  PostgresAdapter,
  PostgresIntrospector,
  PostgresQueryCompiler,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type Dialect,
  type DialectAdapter,
  type Driver,
  type Kysely,
  type QueryCompiler,
  type QueryResult,
  type TransactionSettings,
} from 'kysely';
import { quoteIdent } from './quote-ident.js';

/**
 * A Kysely dialect over an embedded PGlite instance.
 *
 * Written here rather than taken from `kysely-pglite-dialect`, which pins PGlite 0.2–0.4: the driver is
 * small, and it lets payhooks follow PGlite's current line. PGlite is one connection, so the driver
 * hands it out to one holder at a time; otherwise two Kysely transactions would interleave on it.
 *
 * @example
 * const pglite = await PGlite.create('./.payhooks/pgdata');
 * const db = new Kysely<DB>({ dialect: new PGliteDialect(pglite) });
 */
export class PGliteDialect implements Dialect {
  constructor(private readonly pglite: PGlite) {}

  createAdapter(): DialectAdapter {
    return new PostgresAdapter();
  }

  createDriver(): Driver {
    return new PGliteDriver(this.pglite);
  }

  createQueryCompiler(): QueryCompiler {
    return new PostgresQueryCompiler();
  }

  createIntrospector(db: Kysely<unknown>): DatabaseIntrospector {
    return new PostgresIntrospector(db);
  }
}

/** The OID of PostgreSQL's bytea type. */
const BYTEA = 17;

/**
 * Parameter serializers that replace PGlite's own where those are slow: its bytea serializer writes the hex one byte at
 * a time through an array of strings, which halved the receiver's rate on PGlite once a batch's bodies went as one bytea.
 */
const QUERY_OPTIONS = {
  serializers: {
    [BYTEA]: (value: Uint8Array) => `\\x${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex')}`,
  },
};

class PGliteConnection implements DatabaseConnection {
  constructor(private readonly pglite: PGlite) {}

  async executeQuery<R>(compiled: CompiledQuery): Promise<QueryResult<R>> {
    // Without parameters, use the simple protocol (exec), which runs several statements: migrations need it.
    const result =
      compiled.parameters.length === 0
        ? lastOf(await this.pglite.exec(compiled.sql))
        : await this.pglite.query<R>(compiled.sql, [...compiled.parameters], QUERY_OPTIONS);
    const command = result.command?.toUpperCase();
    const changesRows = command === 'INSERT' || command === 'UPDATE' || command === 'DELETE' || command === 'MERGE';
    return {
      rows: result.rows as R[],
      ...(changesRows ? { numAffectedRows: BigInt(result.rowCount ?? result.affectedRows ?? 0) } : {}),
    };
  }

  async *streamQuery<R>(compiled: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    // PGlite materialises results in memory anyway; one chunk is the honest stream.
    yield await this.executeQuery<R>(compiled);
  }
}

class PGliteDriver implements Driver {
  private readonly connection: PGliteConnection;
  private held: Promise<void> = Promise.resolve();

  constructor(private readonly pglite: PGlite) {
    this.connection = new PGliteConnection(pglite);
  }

  async init(): Promise<void> {
    await this.pglite.waitReady;
  }

  private releaseHeld: (() => void) | undefined;

  async acquireConnection(): Promise<DatabaseConnection> {
    const previous = this.held;
    let release!: () => void;
    this.held = new Promise<void>((resolve) => (release = resolve));
    await previous;
    this.releaseHeld = release;
    return this.connection;
  }

  async releaseConnection(): Promise<void> {
    const release = this.releaseHeld;
    this.releaseHeld = undefined;
    release?.();
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    const modes = [settings.isolationLevel ? `isolation level ${settings.isolationLevel}` : '', settings.accessMode ?? ''].filter(Boolean);
    await connection.executeQuery(CompiledQuery.raw(`begin${modes.length ? ` ${modes.join(', ')}` : ''}`));
  }

  async commitTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('commit'));
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('rollback'));
  }

  async savepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`savepoint ${quoteIdent(name)}`));
  }

  async rollbackToSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`rollback to savepoint ${quoteIdent(name)}`));
  }

  async releaseSavepoint(connection: DatabaseConnection, name: string): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw(`release savepoint ${quoteIdent(name)}`));
  }

  async destroy(): Promise<void> {
    if (!this.pglite.closed) await this.pglite.close();
  }
}

function lastOf(results: Results[]): Results {
  return results.at(-1) ?? { rows: [], fields: [] };
}
