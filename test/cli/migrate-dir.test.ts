import { appendFileSync, copyFileSync, existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { readMigrations } from '../../src/store/migrate.js';
import { runInProcess } from '../helpers/cli.js';

const fixture = fileURLToPath(new URL('../fixtures/app-migrations/', import.meta.url));

describe('payhooks migrate --dir on an embedded database', () => {
  it("applies the app's migrations in public, recorded apart from payhooks' own; refuses an edited one and a newer payhooks schema", {
    timeout: 180_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-migrate-dir-'));
    const dataDir = join(dir, 'pgdata');
    const env = { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir, PAYHOOKS_APP_MIGRATIONS: undefined, PAYHOOKS_APP_SCHEMA: undefined };
    const own = readMigrations().map((m) => m.name);
    const app = readMigrations(fixture).map((m) => m.name);

    const first = await runInProcess(['migrate', '--dir', fixture], env, dir);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout.trim().split('\n')).toEqual([`applied: ${own.join(', ')}`, `app schema public: applied: ${app.join(', ')}`]);

    // The service's variable names the same directory when --dir is absent.
    const again = await runInProcess(['migrate'], { ...env, PAYHOOKS_APP_MIGRATIONS: fixture }, dir);
    expect(again.code).toBe(0);
    expect(again.stdout.trim().split('\n')).toEqual(['the schema is up to date', 'app schema public: up to date']);

    const edited = mkdtempSync(join(tmpdir(), 'payhooks-migrate-dir-edited-'));
    for (const name of readdirSync(fixture)) copyFileSync(join(fixture, name), join(edited, name));
    appendFileSync(join(edited, '001_paid_invoices.sql'), 'CREATE INDEX paid_invoices_amount_idx ON paid_invoices (amount);\n');
    const refused = await runInProcess(['migrate', '--dir', edited], env, dir);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/Migration \S*\/001_paid_invoices\.sql was edited after it was applied/);

    const store = await openDatabase({ dataDir });
    try {
      const tables = await sql<{ table_schema: string; table_name: string }>`
        select table_schema, table_name from information_schema.tables
        where table_name in ('paid_invoices', 'payhooks_app_migrations', 'schema_migrations') order by table_name`.execute(store.db);
      expect(tables.rows).toEqual([
        { table_schema: 'public', table_name: 'paid_invoices' },
        { table_schema: 'public', table_name: 'payhooks_app_migrations' },
        { table_schema: 'payhooks', table_name: 'schema_migrations' },
      ]);
      const recorded = await sql<{ name: string }>`select name from public.payhooks_app_migrations order by name`.execute(store.db);
      expect(recorded.rows.map((r) => r.name)).toEqual(app);
      await sql`insert into payhooks.schema_migrations (name, checksum) values ('999_from_the_future.sql', 'x')`.execute(store.db);
    } finally {
      await store.close();
    }

    const newer = await runInProcess(['events', 'list'], env, dir);
    expect(newer.code).toBe(1);
    expect(newer.stderr).toMatch(/migrated by a newer version of payhooks: it records 999_from_the_future\.sql/);
    expect(newer.stderr).toMatch(/upgrade payhooks or point at another schema/);
  });

  it('a --dir that does not exist fails before the database is touched', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-migrate-dir-'));
    const dataDir = join(dir, 'pgdata');
    const result = await runInProcess(
      ['migrate', '--dir', join(dir, 'no-such-migrations')],
      { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir },
      dir,
    );
    expect(result.code).toBe(1);
    // One "payhooks: " prefix, though the error is a PayhooksError whose message carries it already.
    expect(result.stderr).toMatch(/^payhooks: The migrations directory \S*no-such-migrations does not exist or is not a directory\.\n$/);
    expect(existsSync(dataDir)).toBe(false);
  });
});
