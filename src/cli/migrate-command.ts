import type { Command } from 'commander';
import { migrateApp, readMigrations } from '../store/migrate.js';
import type { CommandContext } from './command-context.js';
import { withDatabase } from './with-database.js';

/** `payhooks migrate`: payhooks' migrations, then with `--dir` the app's own. */
export function addMigrateCommand(program: Command, ctx: CommandContext): void {
  const { out, err } = ctx;
  program
    .command('migrate')
    .description("apply pending migrations to the database (also done on start); with --dir, then the app's own")
    .option(
      '--dir <directory>',
      "the app's own numbered SQL files (001_name.sql …), applied after payhooks' in PAYHOOKS_APP_SCHEMA (default public); " +
        'default: PAYHOOKS_APP_MIGRATIONS',
    )
    .action(async (opts: { dir?: string }) => {
      const env = ctx.env('migrate');
      const dir = opts.dir ?? env.PAYHOOKS_APP_MIGRATIONS;
      // Read before the database is opened: a wrong directory fails without touching anything.
      const appFiles = dir === undefined ? undefined : readMigrations(dir);
      const appSchema = env.PAYHOOKS_APP_SCHEMA;
      const [report, app] = await withDatabase(
        env,
        async (store, migrated) => [migrated, appFiles && (await migrateApp(store, appFiles, { appSchema }))],
        { createsDatabase: true },
      );
      await out(report.applied.length ? `applied: ${report.applied.join(', ')}` : 'the schema is up to date');
      if (!app) return;
      await out(`app schema ${appSchema}: ${app.applied.length ? `applied: ${app.applied.join(', ')}` : 'up to date'}`);
      if (app.unknown.length) await err(`app schema ${appSchema} records migrations not in ${dir}: ${app.unknown.join(', ')}`);
    });
}
