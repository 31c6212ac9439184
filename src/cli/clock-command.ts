import type { Command } from 'commander';
import { ConflictError } from '../client/errors.js';
import { createSandboxClient } from '../simulator/sandbox-client.js';
import { UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { countOf } from './format.js';
import { findSimulatorTarget } from './simulator-target.js';

/** Options of `payhooks clock`. */
export interface ClockCommandOptions {
  simulator?: string | undefined;
  /** `advance --to TIMESTAMP`: move to this time instead of by a duration. */
  to?: string | undefined;
}

// An advance may play many retries, each waiting up to the delivery timeout (10 s) for a receiver that hangs.
const ADVANCE_TIMEOUT_MS = 30 * 60_000;

/** `payhooks clock` and `payhooks clock advance 1d | --to TIMESTAMP`: the simulator's time. */
export function addClockCommands(program: Command, ctx: CommandContext): void {
  const sandbox = async (opts: ClockCommandOptions) => {
    const target = await findSimulatorTarget(opts.simulator, ctx.env('clock'), undefined, 'move the clock of');
    return { target, client: createSandboxClient({ baseUrl: target.url, apiKey: target.apiKey, timeoutMs: ADVANCE_TIMEOUT_MS }) };
  };
  const clock = program
    .command('clock')
    .description("the simulator's clock: its time and what waits on it (run payhooks simulate --clock manual to move it by hand)")
    .option('--simulator <url>', 'the simulator (default: PAYHOOKS_API_URL, then ./.payhooks/simulator.json)')
    .action(async (opts: ClockCommandOptions) => {
      const { target, client } = await sandbox(opts);
      const now = await client.clock();
      await ctx.out(
        [
          `${now.now} (${now.mode} clock, simulator ${target.url})`,
          `${countOf(now.pending.length, 'timer')} pending (retries, collections)${now.pending.length ? `; next ${now.pending[0]}` : ''}`,
        ].join('\n'),
      );
    });
  clock
    .command('advance')
    .description(
      'move a manual clock forward by a duration (1d, 2h30m, 90s) or --to a time; the retries and subscription collections due on the way run in order, and it returns once they have been delivered',
    )
    .argument('[duration]', 'how far, e.g. 1d, 5h, 20m, 2s, 1d6h')
    .option('--to <timestamp>', 'an ISO 8601 time to move to instead, e.g. 2027-04-01T00:00:00Z')
    .option('--simulator <url>', 'the simulator (default: PAYHOOKS_API_URL, then ./.payhooks/simulator.json)')
    .action(async (duration: string | undefined, opts: ClockCommandOptions, command: Command) => {
      const merged = { ...command.parent?.opts(), ...opts } as ClockCommandOptions;
      if ((duration === undefined) === (merged.to === undefined)) {
        throw new UsageError('Give a duration (payhooks clock advance 1d) or --to TIMESTAMP, one of the two.');
      }
      if (merged.to !== undefined && Number.isNaN(Date.parse(merged.to))) {
        throw new UsageError(`--to takes an ISO 8601 time such as 2027-04-01T00:00:00Z, not ${JSON.stringify(merged.to)}.`);
      }
      const { client } = await sandbox(merged);
      const input = duration !== undefined ? { by: duration } : { to: new Date(merged.to!).toISOString() };
      const advance = await client.advanceClock(input).catch((err: unknown) => {
        if (err instanceof ConflictError || (err as { status?: number }).status === 400) {
          throw new UsageError((err as { serverMessage?: string }).serverMessage ?? (err as Error).message);
        }
        throw err;
      });
      await ctx.out(`clock ${advance.from} → ${advance.to}: ${countOf(advance.fired, 'timer')} ran (retries, collections)`);
    });
}
