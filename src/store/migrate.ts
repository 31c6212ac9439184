import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import { PayhooksError } from '../errors.js';
import { quoteIdent } from './quote-ident.js';

/** The migrations shipped with payhooks (`migrations/` at the package root). */
export const MIGRATIONS_DIR = fileURLToPath(new URL('../../migrations/', import.meta.url));

const MIGRATION_FILE = /^(\d{3,})_[a-z0-9_]+\.sql$/;

/** One numbered SQL file. */
export interface MigrationFile {
  name: string;
  sql: string;
  checksum: string;
}

/** What {@link migrate} did. */
export interface MigrationReport {
  applied: string[];
  alreadyApplied: string[];
  /** Recorded in the database but not shipped with this version: a newer payhooks migrated it. */
  unknown: string[];
}

/** An applied migration whose file has changed since: migrations only grow, so this stops the start. */
export class MigrationChecksumError extends PayhooksError {
  constructor(
    readonly migration: string,
    readonly recorded: string,
    readonly current: string,
  ) {
    super(
      `Migration ${migration} was edited after it was applied (recorded checksum ${recorded.slice(0, 12)}…, file now ${current.slice(0, 12)}…). ` +
        'Applied migrations must never change: restore the file and put the change in a new numbered migration.',
    );
    this.name = 'MigrationChecksumError';
  }
}

/** Reads the numbered `.sql` files of a folder, in order. */
export function readMigrations(directory: string = MIGRATIONS_DIR): MigrationFile[] {
  const names = readdirSync(directory).filter((name) => name.endsWith('.sql'));
  for (const name of names) {
    if (!MIGRATION_FILE.test(name)) {
      throw new Error(`Migration file ${name} in ${directory} is not named like 001_description.sql.`);
    }
  }
  return names.sort().map((name) => {
    const text = readFileSync(`${directory.replace(/\/$/, '')}/${name}`, 'utf8');
    return { name, sql: text, checksum: createHash('sha256').update(text).digest('hex') };
  });
}

/**
 * Brings the payhooks schema up to date. Safe to run from several processes at once: a transaction-level
 * advisory lock lets one apply while the others wait, and then they find the work done. Everything runs in
 * one transaction, so a failing migration leaves the schema as it was.
 *
 * @example
 * const store = await openDatabase({ url: process.env.DATABASE_URL });
 * const { applied } = await migrate(store);
 */
export async function migrate(store: PayhooksDatabase, files: readonly MigrationFile[] = readMigrations()): Promise<MigrationReport> {
  const schema = store.schema;
  const table = sql.raw(`${quoteIdent(schema)}.schema_migrations`);
  return store.db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(${advisoryKey(schema)}::bigint)`.execute(trx);
    await sql.raw(`create schema if not exists ${quoteIdent(schema)}`).execute(trx);
    await sql`create table if not exists ${table} (
      name text primary key,
      checksum text not null,
      applied_at timestamptz not null default now()
    )`.execute(trx);
    const { rows } = await sql<{ name: string; checksum: string }>`select name, checksum from ${table} order by name`.execute(trx);
    const recorded = new Map(rows.map((row) => [row.name, row.checksum]));

    const report: MigrationReport = { applied: [], alreadyApplied: [], unknown: [] };
    for (const file of files) {
      const checksum = recorded.get(file.name);
      if (checksum !== undefined) {
        if (checksum !== file.checksum) throw new MigrationChecksumError(file.name, checksum, file.checksum);
        report.alreadyApplied.push(file.name);
        continue;
      }
      // Migration files use unqualified names; the search path puts them in the configured schema.
      await sql.raw(`set local search_path to ${quoteIdent(schema)}`).execute(trx);
      await sql.raw(file.sql).execute(trx);
      await sql`insert into ${table} (name, checksum) values (${file.name}, ${file.checksum})`.execute(trx);
      report.applied.push(file.name);
    }
    const shipped = new Set(files.map((file) => file.name));
    report.unknown = [...recorded.keys()].filter((name) => !shipped.has(name));
    return report;
  });
}

/** A stable 64-bit lock key per schema, so migrators of different schemas do not wait on each other. */
function advisoryKey(schema: string): string {
  return createHash('sha256').update(`payhooks:migrate:${schema}`).digest().readBigInt64BE(0).toString();
}
