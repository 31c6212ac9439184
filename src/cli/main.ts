import { readFileSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { Command, CommanderError } from 'commander';
import { z } from 'zod';
import { PayhooksError } from '../errors.js';
import { ENV_COMMANDS, type EnvCommand, type EnvOf, environmentHelp, readEnv } from '../service/environment.js';
import { SilentFailure } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { stdio } from './output.js';

// package.json sits two levels up from both src/cli/main.ts and dist/cli/main.js, and is always published.
const { version } = z
  .object({ version: z.string() })
  .parse(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')));

/** Commands that open the inbox as `events` does, and so read its variables (their help lists them too). */
const READS_AS: Readonly<Record<string, EnvCommand>> = { quarantine: 'events', effects: 'events' };

/** The key of a command in the environment table: `events list` reads what `events` reads, `quarantine list` too. */
function envCommandOf(command: Command): EnvCommand | undefined {
  for (let c: Command | null = command; c; c = c.parent) {
    const name = c.name();
    if ((ENV_COMMANDS as readonly string[]).includes(name)) return name as EnvCommand;
    if (READS_AS[name] !== undefined) return READS_AS[name];
  }
  return undefined;
}

/** Registers one command (with its subcommands) on the program, loading the module that implements it. */
type AddCommand = (program: Command, ctx: CommandContext) => Promise<unknown>;

/** Every command, in the order `payhooks --help` lists them. */
const COMMANDS: Record<string, AddCommand> = {
  serve: async (program, ctx) => (await import('./serve-command.js')).addServeCommand(program, ctx),
  replay: async (program, ctx) => (await import('./replay-command.js')).addReplayCommand(program, ctx),
  prune: async (program, ctx) => (await import('./prune-command.js')).addPruneCommand(program, ctx),
  backfill: async (program, ctx) => (await import('./backfill-command.js')).addBackfillCommand(program, ctx),
  reconcile: async (program, ctx) => (await import('./reconcile-command.js')).addReconcileCommand(program, ctx),
  verify: async (program, ctx) => (await import('./verify-command.js')).addVerifyCommand(program, ctx),
  migrate: async (program, ctx) => (await import('./migrate-command.js')).addMigrateCommand(program, ctx),
  simulate: async (program, ctx) => (await import('./simulate-command.js')).addSimulateCommand(program, ctx),
  trigger: async (program, ctx) => (await import('./trigger-command.js')).addTriggerCommand(program, ctx),
  send: async (program, ctx) => (await import('./send-command.js')).addSendCommand(program, ctx),
  deliveries: async (program, ctx) => (await import('./deliveries-command.js')).addDeliveriesCommands(program, ctx),
  clock: async (program, ctx) => (await import('./clock-command.js')).addClockCommands(program, ctx),
  events: async (program, ctx) => (await import('./events-command.js')).addEventsCommands(program, ctx),
  quarantine: async (program, ctx) => (await import('./quarantine-command.js')).addQuarantineCommands(program, ctx),
  issues: async (program, ctx) => (await import('./issues-command.js')).addIssuesCommands(program, ctx),
  effects: async (program, ctx) => (await import('./effects-command.js')).addEffectsCommands(program, ctx),
  init: async (program, ctx) => (await import('./init-command.js')).addInitCommand(program, ctx, version),
  doctor: async (program, ctx) => (await import('./doctor-command.js')).addDoctorCommand(program, ctx),
};

async function buildProgram(argv: readonly string[], print: (text: string) => void): Promise<Command> {
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

  // Only the command asked for is loaded (each brings its own part of payhooks): `events list` loads about half
  // the modules the whole program does. Help without a command, or a name that is no command, loads them all.
  const asked = argv[0] !== undefined && Object.hasOwn(COMMANDS, argv[0]) ? [argv[0]] : Object.keys(COMMANDS);
  for (const name of asked) await COMMANDS[name]!(program, ctx);

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
  try {
    const program = await buildProgram(argv, print);
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
