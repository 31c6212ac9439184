import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { WORKER_DEFAULTS } from '../worker/defaults.js';
import { Command, CommanderError, Option } from 'commander';
import { z } from 'zod';
import { PayhooksError } from '../errors.js';
import { createLogger } from '../logger.js';
import { readMigrations, migrateApp } from '../store/migrate.js';
import { SilentFailure } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { ENV_COMMANDS, type EnvCommand, type EnvOf, environmentHelp, readEnv } from '../service/environment.js';
import { addDoctorCommand } from './doctor-command.js';
import { addEffectsCommands } from './effects-command.js';
import { addEventsCommands } from './events-command.js';
import { addInitCommand } from './init-command.js';
import { addPruneCommand } from './prune-command.js';
import { addQuarantineCommands } from './quarantine-command.js';
import { addBackfillCommand } from './backfill-command.js';
import { addReconcileCommand } from './reconcile-command.js';
import { addVerifyCommand } from './verify-command.js';
import { addReplayCommand } from './replay-command.js';
import { stdio } from './output.js';
import { receiveServiceConfig } from '../service/config-transfer.js';
import { resolveServiceConfig } from '../service/resolve-service-config.js';
import type { ServiceRole } from '../service/service-config.js';
import { runService } from '../service/run-service.js';
import { loadHandlers } from './load-handlers.js';
import { runSimulate, simulateOptionParsers, type SimulateCommandOptions } from './simulate-command.js';
import { flowsHelp, runTrigger, type TriggerCommandOptions } from './trigger-command.js';
import { FLOW_NAMES } from '../simulator/index.js';
import { untilSignal } from './until-signal.js';
import { withDatabase } from './with-database.js';

// package.json sits two levels up from both src/cli/main.ts and dist/cli/main.js, and is always published.
const { version } = z
  .object({ version: z.string() })
  .parse(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')));

/** The key of a command in the environment table: `events list` reads what `events` reads. */
function envCommandOf(command: Command): EnvCommand | undefined {
  for (let c: Command | null = command; c; c = c.parent) {
    const name = c.name();
    if ((ENV_COMMANDS as readonly string[]).includes(name)) return name as EnvCommand;
  }
  return undefined;
}

function buildProgram(print: (text: string) => void): Command {
  // `print` may return a promise (the default does): waited for, so that results go at the reader's pace.
  const out = async (text: string) => {
    await print(text);
  };
  const err = (text: string) => stdio().err.line(text);
  const program = new Command('payhooks')
    .description("Receive the Payment Collection Service's webhooks, store each event once, run typed handlers.")
    .version(version, '-V, --version', 'print the version of payhooks')
    .addHelpText('after', environmentHelp())
    // Help and --version go where results go (subcommands inherit this), so `run` can be driven in-process;
    // commander's own messages go through the same writer as ours. It cannot wait for either: the process
    // waits for both streams to flush before it exits.
    .configureOutput({
      writeOut: (text) => void out(text.replace(/\n$/, '')),
      writeErr: (text) => void err(text.replace(/\n$/, '')),
    })
    .exitOverride()
    .showHelpAfterError();

  // Each command's environment is read and checked once, before its action runs: a bad variable stops it
  // with every problem listed, before anything is opened or changed.
  const envs = new Map<EnvCommand, unknown>();
  const ctx: CommandContext = {
    out,
    err,
    env(command) {
      if (!envs.has(command)) envs.set(command, readEnv(command));
      return envs.get(command) as EnvOf<typeof command>;
    },
  };
  program.hook('preAction', (_program, action) => {
    const command = envCommandOf(action);
    if (command) ctx.env(command);
  });

  program
    .command('serve')
    .description(
      'run the webhook receiver (POST /webhooks, /healthz, /readyz, /metrics) and the worker (your --handlers, or without them the Postgres mirror) until SIGTERM or SIGINT',
    )
    .addOption(
      new Option('--role <role>', 'receive only, run handlers only, or both').choices(['all', 'receiver', 'worker']).default('all'),
    )
    .option('--handlers <module>', 'a module whose default export registers handlers: export default (hooks) => hooks.on(…)')
    .option(
      '--single-process',
      'with --role all on PostgreSQL, run the handlers, the mirror and the sinks in this process instead of a worker child process (a CPU-bound handler or a stalled sink then delays acknowledgements)',
    )
    .action(async (opts: { role: ServiceRole; handlers?: string; singleProcess?: boolean }) => {
      const logger = createLogger({ level: ctx.env('serve').PAYHOOKS_LOG_LEVEL });
      // A worker child runs with what its parent resolved, instead of reading the environment and the file again.
      const handed = opts.role === 'worker' ? await receiveServiceConfig() : undefined;
      const config = handed ?? (await resolveServiceConfig({ env: process.env, flags: { role: opts.role }, logger }));
      const register = opts.handlers ? await loadHandlers(opts.handlers) : undefined;
      const running = await runService(config, { logger, register, handlersModule: opts.handlers, singleProcess: opts.singleProcess });
      // Running handlers get the worker's stop timeout; past it (and a little for the rest), exit regardless.
      const clean = await untilSignal(logger, () => running.close(), { deadlineMs: WORKER_DEFAULTS.stopTimeoutMs + 1500 });
      if (!clean) throw new SilentFailure();
    });

  addReplayCommand(program, ctx);
  addPruneCommand(program, ctx);
  addBackfillCommand(program, ctx);
  addReconcileCommand(program, ctx);
  addVerifyCommand(program, ctx);

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
      const [report, app] = await withDatabase(env, async (store, migrated) => [
        migrated,
        appFiles && (await migrateApp(store, appFiles, { appSchema })),
      ]);
      await out(report.applied.length ? `applied: ${report.applied.join(', ')}` : 'the schema is up to date');
      if (!app) return;
      await out(`app schema ${appSchema}: ${app.applied.length ? `applied: ${app.applied.join(', ')}` : 'up to date'}`);
      if (app.unknown.length) await err(`app schema ${appSchema} records migrations not in ${dir}: ${app.unknown.join(', ')}`);
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
      await out(result.lines.join('\n'));
      if (result.error) await err(`payhooks: ${result.error}`);
      if (!result.ok) throw new SilentFailure();
    });

  addEventsCommands(program, ctx);
  addQuarantineCommands(program, ctx);
  addEffectsCommands(program, ctx);
  addInitCommand(program, ctx, version);
  addDoctorCommand(program, ctx);

  // Every command's help ends with the variables it reads, made from the one table in env.ts.
  const withSubcommands = (command: Command): Command[] => [command, ...command.commands.flatMap(withSubcommands)];
  for (const command of program.commands.flatMap(withSubcommands)) {
    const key = envCommandOf(command);
    if (key) command.addHelpText('after', environmentHelp(key));
  }
  return program;
}

/**
 * Runs the payhooks command line; resolves to the exit code. Results are printed with `print` (default: stdout,
 * at the pace its reader takes them; a promise it returns is waited for), notes and errors on stderr.
 *
 * @example
 * process.exitCode = await run(['events', 'list', '--status', 'dead']);
 */
export async function run(argv: string[], print: (text: string) => void = (text) => stdio().out.line(text)): Promise<number> {
  const program = buildProgram(print);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    if (err instanceof SilentFailure) return err.exitCode;
    await stdio().err.line(err instanceof PayhooksError ? err.message : `payhooks: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

/**
 * The commands that may run for minutes and keep the embedded database busy meanwhile. Every other command ends in
 * seconds, so its process compiles the embedded database's WebAssembly with V8's baseline compiler only: optimising it
 * in the background cost more CPU than such a command runs for (`events list` on the embedded database: 1.5 s of CPU
 * with the optimising tier, 1.0 s without; `migrate` of a new data directory: 5.0 s and 3.5 s).
 */
const LONG_RUNNING_COMMANDS = new Set(['serve', 'backfill', 'reconcile', 'verify', 'simulate']);

/**
 * Runs the command line as the `payhooks` process (bin/payhooks.js): runs `argv`, waits until the readers of
 * stdout and stderr have taken everything, then exits with the command's code. A reader that closed early
 * (`| head -1`) ends the wait quietly; any other failure to write the output makes the exit code 1.
 *
 * @example
 * await runAndExit(process.argv.slice(2));
 */
export async function runAndExit(argv: string[]): Promise<never> {
  if (!LONG_RUNNING_COMMANDS.has(argv[0] ?? '')) setFlagsFromString('--liftoff-only');
  // Made first, so that a reader leaving early is handled for every write, progress on stderr included.
  const { out, err } = stdio();
  const code = await run(argv);
  // Not bounded by a timer: a pipe's reader sets the pace (`| less` waits for its user), and this waits for
  // nothing else. Exiting before it cut piped output at 64 KB.
  await out.flushed();
  if (out.failure) await err.line(`payhooks: the output could not be written whole: ${out.failure.message}`);
  await err.flushed();
  // Exit now rather than when the event loop empties: a connection to a database that stopped answering must
  // not keep the process alive after the command is done with it.
  process.exit(out.failure && code === 0 ? 1 : code);
}
