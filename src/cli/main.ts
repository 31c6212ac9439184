import { Command, CommanderError, Option } from 'commander';
import { createLogger } from '../logger.js';
import { openDatabase, type PayhooksDatabase } from '../store/database.js';
import { getEvent, listEvents } from '../store/inbox.js';
import { assertPruneAge, pruneEvents, replayEvents } from '../store/maintenance.js';
import { DEFAULT_APP_SCHEMA, migrate, migrateApp, readMigrations, type MigrationReport } from '../store/migrate.js';
import { parseDuration } from './duration.js';
import { EVENT_STATUSES } from '../store/schema.js';
import { readServiceEnv } from './config.js';
import { startService, type ServiceRole } from './service.js';
import { loadHandlers } from './load-handlers.js';
import { runSimulate, simulateOptionParsers, type SimulateCommandOptions } from './simulate-command.js';
import { flowsHelp, runTrigger, type TriggerCommandOptions } from './trigger-command.js';
import { FLOW_NAMES } from '../simulator/index.js';
import { untilSignal } from './until-signal.js';

const ENVIRONMENT_HELP = `
Environment:
  PAYHOOKS_WEBHOOK_SECRET  endpoint signing secret; comma-separated during a rotation (serve; trigger's default --secret)
  DATABASE_URL             PostgreSQL connection string; unset: embedded PGlite under ./.payhooks/
  PAYHOOKS_SCHEMA          Postgres schema of payhooks' tables (default payhooks)
  PAYHOOKS_API_KEY         sk_… key for current-state reads; unset: events' own snapshots are used
  PAYHOOKS_API_URL         base URL of the service's API
  PORT                     port of serve (default 8787)
  PAYHOOKS_LOG_LEVEL       pino level (default info)`;

/** Opens the database the environment names (no secret needed), migrates it, runs `work`, closes it. */
async function withDatabase<T>(work: (store: PayhooksDatabase, migrated: MigrationReport) => Promise<T>): Promise<T> {
  const store = await openDatabase({
    url: process.env.DATABASE_URL || undefined,
    dataDir: process.env.PAYHOOKS_DATA_DIR,
    schema: process.env.PAYHOOKS_SCHEMA,
  });
  try {
    return await work(store, await migrate(store));
  } finally {
    await store.close();
  }
}

function buildProgram(out: (text: string) => void): Command {
  const program = new Command('payhooks')
    .description("Receive the Payment Collection Service's webhooks, store each event once, run typed handlers.")
    .addHelpText('after', ENVIRONMENT_HELP)
    .exitOverride()
    .showHelpAfterError();

  program
    .command('serve')
    .description('run the webhook receiver (POST /webhooks, /healthz, /readyz, /metrics) and the worker until SIGTERM or SIGINT')
    .addOption(
      new Option('--role <role>', 'receive only, run handlers only, or both').choices(['all', 'receiver', 'worker']).default('all'),
    )
    .option('--handlers <module>', 'a module whose default export registers handlers: export default (hooks) => hooks.on(…)')
    .action(async (opts: { role: ServiceRole; handlers?: string }) => {
      const logger = createLogger();
      const register = opts.handlers ? await loadHandlers(opts.handlers) : undefined;
      const service = await startService(readServiceEnv(), logger, { role: opts.role, register });
      await untilSignal(logger, () => service.close());
    });

  program
    .command('replay')
    .description('re-queue events by id, or every event in a state (handlers that completed are not run again, except for done events)')
    .argument('[eventIds...]', 'event ids to re-queue')
    .addOption(new Option('--status <status>', 're-queue every event in this state').choices(['dead', 'invalid', 'ignored', 'done']))
    .action(async (eventIds: string[], opts: { status?: 'dead' | 'invalid' | 'ignored' | 'done' }) => {
      if (eventIds.length === 0 && !opts.status)
        throw new UsageError('Name event ids to replay, or pass --status dead|invalid|ignored|done.');
      if (eventIds.length > 0 && opts.status) throw new UsageError('Give either event ids or --status, not both.');
      const replayed = await withDatabase((store) => replayEvents(store, opts.status ? { status: opts.status } : { eventIds }));
      const missing = eventIds.filter((id) => !replayed.includes(id));
      out(`re-queued ${replayed.length} event${replayed.length === 1 ? '' : 's'}${replayed.length ? `: ${replayed.join(', ')}` : ''}`);
      if (missing.length) {
        console.error(`not re-queued (unknown, or being processed now): ${missing.join(', ')}`);
        throw new SilentFailure();
      }
    });

  program
    .command('prune')
    .description('delete finished (done, ignored) events older than the given age; never unfinished, dead or invalid ones')
    .requiredOption('--older-than <age>', "minimum age, e.g. 30d (at least 4d7h, the sender's retry horizon)")
    .action(async (opts: { olderThan: string }) => {
      const olderThanMs = parseDuration(opts.olderThan);
      assertPruneAge(olderThanMs);
      const deleted = await withDatabase((store) => pruneEvents(store, olderThanMs));
      out(`deleted ${deleted} finished event${deleted === 1 ? '' : 's'} older than ${opts.olderThan}`);
    });

  program
    .command('migrate')
    .description("apply pending migrations to the database (also done on start); with --dir, then the app's own")
    .option(
      '--dir <directory>',
      "the app's own numbered SQL files (001_name.sql …), applied after payhooks' in PAYHOOKS_APP_SCHEMA (default public); " +
        'default: PAYHOOKS_APP_MIGRATIONS',
    )
    .action(async (opts: { dir?: string }) => {
      const dir = opts.dir ?? (process.env.PAYHOOKS_APP_MIGRATIONS || undefined);
      // Read before the database is opened: a wrong directory fails without touching anything.
      const appFiles = dir === undefined ? undefined : readMigrations(dir);
      const appSchema = process.env.PAYHOOKS_APP_SCHEMA || DEFAULT_APP_SCHEMA;
      const [report, app] = await withDatabase(async (store, migrated) => [
        migrated,
        appFiles && (await migrateApp(store, appFiles, { appSchema })),
      ]);
      out(report.applied.length ? `applied: ${report.applied.join(', ')}` : 'the schema is up to date');
      if (!app) return;
      out(`app schema ${appSchema}: ${app.applied.length ? `applied: ${app.applied.join(', ')}` : 'up to date'}`);
      if (app.unknown.length) console.error(`app schema ${appSchema} records migrations not in ${dir}: ${app.unknown.join(', ')}`);
    });

  program
    .command('simulate')
    .description('run a local, in-memory Payment Collection Service: its REST interface and real signed webhook deliveries')
    .option(
      '--forward-to <url>',
      'register a webhook endpoint at this URL (e.g. http://127.0.0.1:8787/webhooks), print its secret and write ./.payhooks/simulator.json for serve and trigger',
      simulateOptionParsers.forwardTo,
    )
    .option(
      '--events <types>',
      'with --forward-to: the event types it receives, comma-separated (default: all 19)',
      simulateOptionParsers.events,
    )
    .option('--port <port>', 'port to listen on (0: any free port)', simulateOptionParsers.port, 4010)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option(
      '--time-scale <n>',
      'divide the retry delays (2 s … 3 days) and the rotation grace period by n',
      simulateOptionParsers.timeScale,
      1,
    )
    .option('--duplicate-rate <p>', 'probability that a delivery is sent twice', simulateOptionParsers.rate('--duplicate-rate'), 0)
    .option('--reorder', 'buffer deliveries briefly and send them shuffled', false)
    .option(
      '--fail-rate <p>',
      'probability that a REST call answers 503 (for writes, half of them after the write is done)',
      simulateOptionParsers.rate('--fail-rate'),
      0,
    )
    .action(async (opts: SimulateCommandOptions) => {
      await runSimulate(opts, createLogger(), out);
    });

  program
    .command('trigger')
    .description(
      'run a flow (e.g. cash-payment) through the simulator, which emits and delivers its events; exit 0 when every step is accepted',
    )
    .argument('<flow|type>', `a flow (${FLOW_NAMES.join(', ')}) or an event type, e.g. INVOICE_PAID`)
    .option('--simulator <url>', 'the simulator to run the flow in (default: PAYHOOKS_API_URL, then ./.payhooks/simulator.json)')
    .option('--to <url>', "with an event type: send the catalog's example straight to this receiver, e.g. http://127.0.0.1:8787/webhooks")
    .option('--secret <secret>', 'with --to: the secret to sign with (default: PAYHOOKS_WEBHOOK_SECRET, then the session file)')
    .addHelpText('after', flowsHelp())
    .action(async (name: string, opts: TriggerCommandOptions) => {
      const result = await runTrigger(name, opts);
      out(result.lines.join('\n'));
      if (result.error) console.error(`payhooks: ${result.error}`);
      if (!result.ok) throw new SilentFailure();
    });

  const events = program.command('events').description('inspect stored events');
  events
    .command('list')
    .description('list stored events, newest first')
    .addOption(new Option('--status <status>', 'only events in this state').choices(EVENT_STATUSES))
    .option('--type <type>', 'only events of this type, e.g. INVOICE_PAID')
    .option('--limit <n>', 'at most this many', (v) => positiveInt(v, '--limit'), 100)
    .option('--json', 'print one JSON array')
    .action(async (opts: { status?: (typeof EVENT_STATUSES)[number]; type?: string; limit: number; json?: boolean }) => {
      const rows = await withDatabase((store) => listEvents(store, { status: opts.status, eventType: opts.type, limit: opts.limit }));
      if (opts.json) return out(JSON.stringify(rows, null, 2));
      if (rows.length === 0) return out('no events');
      out(
        table(
          rows.map((e) => [
            e.eventId,
            e.eventType,
            e.status,
            String(e.attempts),
            String(e.deliveries),
            e.receivedAt.toISOString(),
            e.lastError ?? '',
          ]),
        ),
      );
    });
  events
    .command('show')
    .description('show one stored event with its body and headers')
    .argument('<eventId>')
    .action(async (eventId: string) => {
      const event = await withDatabase((store) => getEvent(store, eventId));
      if (!event) throw new UsageError(`No stored event with eventId ${eventId}.`);
      out(JSON.stringify(event, null, 2));
    });
  return program;
}

class UsageError extends Error {}
/** A failure already explained on stderr. */
class SilentFailure extends Error {}

function positiveInt(value: string, name: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new UsageError(`${name} takes a positive whole number, not ${JSON.stringify(value)}.`);
  return n;
}

function table(rows: string[][]): string {
  const header = ['EVENT ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'DELIVERIES', 'RECEIVED', 'LAST ERROR'];
  const all = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...all.map((row) => (row[i] ?? '').length)));
  return all
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/**
 * Runs the payhooks command line; resolves to the exit code.
 *
 * @example
 * process.exitCode = await run(['events', 'list', '--status', 'dead']);
 */
export async function run(argv: string[], out: (text: string) => void = (text) => console.log(text)): Promise<number> {
  const program = buildProgram(out);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof SilentFailure) return 1;
    const message = err instanceof Error ? err.message : String(err);
    // PayhooksError messages already start with "payhooks: ".
    console.error(message.startsWith('payhooks: ') ? message : `payhooks: ${message}`);
    return 1;
  }
}
