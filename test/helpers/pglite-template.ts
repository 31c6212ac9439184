// Starting PGlite in memory costs seconds, nearly all of it initdb (a second WebAssembly program that creates the
// cluster). The suite does that once: `buildPGliteTemplates` (run by test/global-setup-db.ts) saves the new cluster
// as a data-directory tarball, and a second one with payhooks' migrations applied in TEMPLATE_SCHEMA;
// `useTemplates` (test/setup-db.ts) makes every `memory://` database of a test a copy of one of them. A copy is
// the same database a fresh start makes; production never does this (setMemoryPGliteSource is test-only).
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { DATABASE_DEFAULTS, openDatabase, setMemoryPGliteSource } from '../../src/store/database.js';
import { MIGRATIONS_DIR, migrate } from '../../src/store/migrate.js';

/** The schema whose `memory://` databases start migrated (test/helpers/stores.ts opens its PGlite stores in it). */
export const TEMPLATE_SCHEMA = 'store_template';

/** Where the two tarballs of a run are, and the data directory on disk. */
export interface PGliteTemplates {
  /** A new cluster, as `PGlite.create('memory://')` makes it. */
  empty: string;
  /** The same with payhooks' migrations applied in {@link TEMPLATE_SCHEMA}. */
  migrated: string;
  /**
   * A data directory on disk as `payhooks migrate` leaves a new one (the default schema, `payhooks`): what
   * {@link seedDataDir} copies for a spawned `payhooks serve` whose test is not about creating the database.
   */
  dataDir: string;
}

const pgliteDist = dirname(createRequire(import.meta.url).resolve('@electric-sql/pglite'));

/**
 * Makes the tarballs, or finds them from an earlier run: they are kept under node_modules/.cache, named by a hash
 * of PGlite's version and of every migration, so a changed migration makes new ones.
 */
export async function buildPGliteTemplates(): Promise<PGliteTemplates> {
  const hash = createHash('sha256');
  hash.update(readFileSync(join(pgliteDist, '..', 'package.json')));
  for (const name of readdirSync(MIGRATIONS_DIR)
    .filter((file) => file.endsWith('.sql'))
    .sort())
    hash.update(name).update(readFileSync(join(MIGRATIONS_DIR, name)));
  const key = hash.digest('hex').slice(0, 16);
  const dir = fileURLToPath(new URL('../../node_modules/.cache/payhooks-pglite-templates/', import.meta.url));
  const templates = {
    empty: join(dir, `${key}-empty.tar`),
    migrated: join(dir, `${key}-migrated.tar`),
    // Of today (UTC): the history partitions it holds are made for the day it was made, and a copy opened days later
    // would make each day's since then in every process that opens it.
    dataDir: join(dir, `${key}-${new Date().toISOString().slice(0, 10)}-pgdata`),
  };
  mkdirSync(dir, { recursive: true });
  if (!existsSync(templates.dataDir)) {
    // Only this key's copies of earlier days: worktrees with other migrations share the cache, and removing their
    // directory while their tests copy it fails them (ENOENT in seedDataDir).
    for (const old of readdirSync(dir).filter((name) => name.startsWith(`${key}-`) && name.endsWith('-pgdata')))
      rmSync(join(dir, old), { recursive: true, force: true });
    await buildDataDir(templates.dataDir);
  }
  if (existsSync(templates.empty) && existsSync(templates.migrated)) return templates;
  let pglite: PGlite | undefined;
  setMemoryPGliteSource(async () => {
    pglite = await PGlite.create('memory://');
    return pglite;
  });
  try {
    const store = await openDatabase({ dataDir: 'memory://', schema: TEMPLATE_SCHEMA });
    try {
      if (!pglite) throw new Error('the PGlite template was not made through setMemoryPGliteSource');
      await save(pglite, templates.empty);
      await migrate(store);
      await save(pglite, templates.migrated);
    } finally {
      await store.close();
    }
  } finally {
    setMemoryPGliteSource(undefined);
  }
  return templates;
}

/** Makes the data directory on disk whole or not at all (built beside it, then renamed into place). */
async function buildDataDir(path: string): Promise<void> {
  const partial = `${path}.${process.pid}.partial`;
  rmSync(partial, { recursive: true, force: true });
  const store = await openDatabase({ dataDir: partial });
  try {
    await migrate(store);
  } finally {
    await store.close();
  }
  try {
    renameSync(partial, path);
  } catch (err) {
    // Another run made it first: theirs is the same.
    if (!existsSync(path)) throw err;
    rmSync(partial, { recursive: true, force: true });
  }
}

/**
 * Makes `target` (a data directory that does not exist yet) a copy of the migrated one on disk, so that a spawned
 * `payhooks serve` or command on the embedded database skips initdb and the migrations (about 3 s of CPU a process
 * on the 2-core machine). For tests that are not about a database's first start; those keep an empty folder.
 *
 * @example
 * const dataDir = seedDataDir(join(dir, 'pgdata')); // for PAYHOOKS_DATA_DIR
 */
export function seedDataDir(target: string): string {
  if (!seededFrom) throw new Error('seedDataDir is for the db, e2e and soak tiers (test/setup-db.ts gives it the template)');
  if (existsSync(target)) throw new Error(`seedDataDir: ${target} exists already`);
  mkdirSync(dirname(target), { recursive: true });
  cpSync(seededFrom, target, { recursive: true });
  return target;
}

/**
 * {@link seedDataDir} where `payhooks` run in `cwd` looks by default (DATABASE_DEFAULTS.dataDir); resolves to that path.
 *
 * @example
 * const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-'));
 * seedDefaultDataDir(dir);
 * spawnCli(['serve'], { DATABASE_URL: '' }, dir);
 */
export function seedDefaultDataDir(cwd: string): string {
  return seedDataDir(join(cwd, DATABASE_DEFAULTS.dataDir));
}

let seededFrom: string | undefined;

/** Writes the data directory whole or not at all: two runs may make the same template at once. */
async function save(pglite: PGlite, path: string): Promise<void> {
  const tarball = await pglite.dumpDataDir('none');
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, new Uint8Array(await tarball.arrayBuffer()));
  renameSync(partial, path);
}

/** Makes every `memory://` database of this test file a copy of a template: migrated in {@link TEMPLATE_SCHEMA}. */
export function useTemplates(templates: PGliteTemplates): void {
  seededFrom = templates.dataDir;
  const blobs = new Map<string, Blob>();
  const blob = (path: string) => {
    const found = blobs.get(path) ?? new Blob([readFileSync(path)]);
    blobs.set(path, found);
    return found;
  };
  setMemoryPGliteSource((schema) =>
    PGlite.create({ dataDir: 'memory://', loadDataDir: blob(schema === TEMPLATE_SCHEMA ? templates.migrated : templates.empty) }),
  );
}
