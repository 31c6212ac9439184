import { copyFileSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql, type Generated } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { MigrationChecksumError, UnknownMigrationsError, migrate, readMigrations } from '../../src/store/migrate.js';
import { putEvent } from '../helpers/inbox.js';
import { uniqueSchema } from '../helpers/pg.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const fixture = fileURLToPath(new URL('../fixtures/app-migrations/', import.meta.url));
const logger = pino({ level: 'silent' });
const fast = { pollIntervalMs: 50, backoff: { baseMs: 10, maxMs: 50 } };

/** The app's own tables, as the fixture migrations make them. */
interface AppTables {
  paid_invoices: { invoice_id: string; amount: number; runs: Generated<number>; currency: Generated<string> };
}

describe.each(backends)('app migrations and ctx.transaction on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  // On the shared server each test gets its own app schema (public is shared by every test run). PGlite in
  // memory is private: it checks a named schema in the handler test and the default, public, in the others.
  let appSchema: string | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store?.kind === 'postgres' && appSchema) await sql.raw(`drop schema if exists "${appSchema}" cascade`).execute(store.db);
    if (store) await dispose(store);
    store = undefined;
  });

  async function open(pgliteSchema?: string) {
    store = await backend.open();
    appSchema = backend.name === 'postgres' ? uniqueSchema('app') : pgliteSchema;
    return store;
  }
  const expectedSchema = () => appSchema ?? 'public';

  async function tablesNamed(s: PayhooksDatabase, name: string): Promise<string[]> {
    const { rows } = await sql<{ table_schema: string }>`
      select table_schema from information_schema.tables where table_name = ${name} and table_schema in (${expectedSchema()}, ${s.schema})`.execute(
      s.db,
    );
    return rows.map((r) => r.table_schema);
  }

  describe.skipIf(!backend.available)('app tables', () => {
    it("applies the app's migrations in its schema, and a handler's ctx.transaction writes there: a retry leaves one row", async () => {
      const s = await open('billing');
      hooks = createPayhooks({ database: s, logger, migrations: fixture, appSchema, worker: fast });
      let attempts = 0;
      hooks.on(
        'INVOICE_PAID',
        async (event, ctx) => {
          attempts++;
          await ctx.transaction<AppTables>(async (trx) => {
            await trx
              .insertInto('paid_invoices')
              .values({ invoice_id: event.data.invoiceId, amount: event.data.amount })
              .onConflict((c) => c.column('invoice_id').doUpdateSet({ runs: sql`paid_invoices.runs + 1` }))
              .execute();
            // Inside the transaction, after the write: the write rolls back with it, and the retry commits.
            if (ctx.attempt === 1) throw new Error('the first attempt fails after its write');
          });
        },
        { name: 'book-paid-invoice' },
      );
      await hooks.ready();
      expect(await tablesNamed(s, 'paid_invoices')).toEqual([expectedSchema()]);

      const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_paid_once' });
      await putEvent(s, event);
      await hooks.start();
      await waitFor(async () => (await getEvent(s, 'evt_paid_once'))?.status === 'done', 'evt_paid_once done');

      expect(attempts).toBe(2);
      expect(await getEvent(s, 'evt_paid_once')).toMatchObject({ attempts: 2, completedHandlers: ['book-paid-invoice'] });
      const db = await hooks.appDb<AppTables>();
      expect(await db.selectFrom('paid_invoices').selectAll().execute()).toEqual([
        { invoice_id: event.data.invoiceId, amount: event.data.amount, runs: 1, currency: 'MXN' },
      ]);
    });

    it("records payhooks' and the app's migrations in separate tables, so the same numbers never collide", async () => {
      const s = await open();
      hooks = createPayhooks({ database: s, logger, migrations: fixture, appSchema });
      await hooks.ready();
      const own = await sql<{ name: string }>`select name from ${sql.id(s.schema, 'schema_migrations')} order by name`.execute(s.db);
      const app = await sql<{ name: string; checksum: string }>`
        select name, checksum from ${sql.id(expectedSchema(), 'payhooks_app_migrations')} order by name`.execute(s.db);
      expect(own.rows.map((r) => r.name)).toEqual(readMigrations().map((m) => m.name));
      expect(app.rows).toEqual(readMigrations(fixture).map((m) => ({ name: m.name, checksum: m.checksum })));
      expect(app.rows.map((r) => r.name)).toEqual(['001_paid_invoices.sql', '002_paid_invoices_currency.sql']);
      // Opening again applies nothing new and accepts both sets as they are.
      await hooks.close();
      hooks = createPayhooks({ database: s, logger, migrations: fixture, appSchema });
      await hooks.ready();
      expect(await tablesNamed(s, 'payhooks_app_migrations')).toEqual([expectedSchema()]);
    });

    it('refuses an app migration edited after it was applied, naming the file, and leaves the data alone', async () => {
      const s = await open();
      const dir = mkdtempSync(join(tmpdir(), 'payhooks-app-mig-'));
      for (const name of readdirSync(fixture)) copyFileSync(join(fixture, name), join(dir, name));
      hooks = createPayhooks({ database: s, logger, migrations: dir, appSchema });
      const db = await hooks.appDb<AppTables>();
      await db.insertInto('paid_invoices').values({ invoice_id: 'inv_kept', amount: 100 }).execute();
      await hooks.close();

      writeFileSync(join(dir, '001_paid_invoices.sql'), '-- tidied up\n', { flag: 'a' });
      writeFileSync(join(dir, '003_more.sql'), 'create table more_things (id int);\n');
      hooks = createPayhooks({ database: s, logger, migrations: dir, appSchema });
      const refused = hooks.ready();
      await expect(refused).rejects.toThrow(MigrationChecksumError);
      await expect(refused).rejects.toThrow(/^payhooks: Migration \S*001_paid_invoices\.sql was edited after it was applied/);
      expect(await tablesNamed(s, 'more_things')).toEqual([]);
      const { rows } = await sql<{ invoice_id: string }>`select invoice_id from ${sql.id(expectedSchema(), 'paid_invoices')}`.execute(s.db);
      expect(rows).toEqual([{ invoice_id: 'inv_kept' }]);
    });

    it('refuses to start on a schema migrated by a newer payhooks, with or without migrate, and applies nothing', async () => {
      const s = await open();
      await sql`insert into ${sql.id(s.schema, 'schema_migrations')} (name, checksum) values ('999_from_the_future.sql', 'x')`.execute(
        s.db,
      );
      const message = /newer version of payhooks: it records 999_from_the_future\.sql.*upgrade payhooks or point at another schema/;
      for (const migrateOption of [true, false]) {
        const instance = createPayhooks({ database: s, logger, migrate: migrateOption, migrations: fixture, appSchema });
        const refused = instance.ready();
        await expect(refused).rejects.toThrow(UnknownMigrationsError);
        await expect(refused).rejects.toThrow(message);
        await expect(instance.start()).rejects.toThrow(message);
      }
      await expect(migrate(s)).rejects.toThrow(message);
      expect(await tablesNamed(s, 'paid_invoices')).toEqual([]);
    });
  });
});

describe('createPayhooks({ migrations }) checks its options at once', () => {
  it('a missing directory or a badly named file fails at construction', () => {
    expect(() => createPayhooks({ migrations: '/no/such/dir', logger })).toThrow(/migrations directory \/no\/such\/dir does not exist/);
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-app-mig-'));
    writeFileSync(join(dir, 'paid invoices.sql'), 'select 1;');
    expect(() => createPayhooks({ migrations: dir, logger })).toThrow(/paid invoices\.sql .* is not named like 001_description\.sql/);
    expect(() => createPayhooks({ appSchema: 'Billing; drop', logger })).toThrow(/Invalid schema name/);
  });
});
