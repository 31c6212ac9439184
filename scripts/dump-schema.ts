// Writes docs/schema.sql: the schema that payhooks' migrations produce (tables, indexes, functions, the claim's
// current text), read in one place instead of across the numbered files that built it. test/store/schema-dump.test.ts
// migrates a fresh schema, dumps it the same way and compares, so a migration that changes the schema without the dump
// fails there; review then shows the schema's change beside the migration's.
//
//   npm run schema:dump        (needs a PostgreSQL server: DATABASE_URL, or the local one; and pg_dump on the PATH)
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { DATABASE_DEFAULTS, openDatabase } from '../src/store/database.js';
import { MIGRATIONS_DIR, MIRROR_MIGRATIONS_DIR, migrate, migrateMirror, readMigrations } from '../src/store/migrate.js';

/** Where the committed dump lives. */
export const SCHEMA_DUMP_PATH = fileURLToPath(new URL('../docs/schema.sql', import.meta.url));

/** The mirror's schema as an installation names it by default; the dump says this name whatever it migrated into. */
const MIRROR_SCHEMA = 'payhooks_mirror';

const run = promisify(execFile);

/** Which folders of migrations to apply; tests pass a changed copy to see the dump notice it. */
export interface DumpSources {
  migrations?: string | undefined;
  mirrorMigrations?: string | undefined;
}

/**
 * Migrates two fresh schemas on the server at `url` (payhooks' own and the mirror's), dumps their definitions with
 * pg_dump and drops them again. Names are written as an installation with the defaults has them (`payhooks`,
 * `payhooks_mirror`), and what differs from one pg_dump run or server to the next (its header, session settings, the
 * random `\restrict` key of newer minor releases) is left out, so that two dumps of one schema are equal text.
 */
export async function dumpSchema(url: string, sources: DumpSources = {}): Promise<string> {
  const suffix = `${process.pid}_${Math.random().toString(36).slice(2, 8)}`;
  const schema = `schema_dump_${suffix}`;
  const mirror = `schema_dump_mirror_${suffix}`;
  const store = await openDatabase({ url, schema });
  try {
    await migrate(store, readMigrations(sources.migrations ?? MIGRATIONS_DIR));
    await migrateMirror(store, mirror, readMigrations(sources.mirrorMigrations ?? MIRROR_MIGRATIONS_DIR));
    const { stdout } = await run(
      'pg_dump',
      ['--schema-only', '--no-owner', '--no-privileges', `--schema=${schema}`, `--schema=${mirror}`, url],
      { maxBuffer: 64 * 1024 * 1024 },
    );
    return normalise(stdout, { [mirror]: MIRROR_SCHEMA, [schema]: DATABASE_DEFAULTS.schema });
  } finally {
    await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(store.db);
    await sql`drop schema if exists ${sql.id(mirror)} cascade`.execute(store.db);
    await store.close();
  }
}

/** pg_dump's text without what varies between runs, with the schemas renamed to their default names. */
function normalise(dump: string, names: Record<string, string>): string {
  const kept = dump
    .split('\n')
    .filter((line) => !/^(SET |SELECT pg_catalog\.set_config|\\restrict |\\unrestrict |-- Dumped (from|by) )/.test(line))
    .join('\n');
  // Longest first: the mirror's generated name contains the main schema's prefix.
  const renamed = Object.entries(names)
    .sort(([a], [b]) => b.length - a.length)
    .reduce((text, [from, to]) => text.replaceAll(from, to), kept);
  const header =
    "-- The schema that payhooks' migrations produce, dumped by `npm run schema:dump` (scripts/dump-schema.ts).\n" +
    '-- Generated: edit migrations/, never this file; test/store/schema-dump.test.ts holds the two together.\n';
  return `${header}${renamed.replace(/\n{3,}/g, '\n\n').trim()}\n`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  writeFileSync(SCHEMA_DUMP_PATH, await dumpSchema(url));
  console.log(`wrote ${SCHEMA_DUMP_PATH}`);
}
