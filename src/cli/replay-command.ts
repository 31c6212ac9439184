import { type Command, Option } from 'commander';
import type { ReplayableStatus, ReplaySelection } from '../store/maintenance.js';
import { addBulkOptions, BULK_DEFAULTS, type BulkOptions } from './bulk.js';
import { SilentFailure, UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { confirmBulk } from './confirm-bulk.js';
import { countOf, sampleOf } from './format.js';
import type { Inbox } from './inbox.js';
import { startProgress } from './progress.js';
import { withInbox } from './with-inbox.js';

const REPLAYABLE: readonly ReplayableStatus[] = ['dead', 'invalid', 'ignored', 'done'];

/** The options of `payhooks replay`. */
export interface ReplayCommandOptions extends BulkOptions {
  status?: ReplayableStatus | undefined;
}

/**
 * Adds `payhooks replay [ids…] [--status S] [--dry-run] [--yes] [--batch-size N]`: shows how many events it
 * would re-queue with a sample of their ids, asks (or needs --yes) when there is more than one, then
 * re-queues them in batches with progress.
 */
export function addReplayCommand(program: Command, ctx: CommandContext): void {
  const command = program
    .command('replay')
    .description('re-queue events by id, or every event in a state (handlers that completed are not run again, except for done events)')
    .argument('[eventIds...]', 'event ids to re-queue')
    .addOption(new Option('--status <status>', 're-queue every event in this state').choices(REPLAYABLE));
  addBulkOptions(command).action(async (eventIds: string[], opts: ReplayCommandOptions) => {
    if (eventIds.length === 0 && !opts.status)
      throw new UsageError('Name event ids to replay, or pass --status dead|invalid|ignored|done.');
    if (eventIds.length > 0 && opts.status) throw new UsageError('Give either event ids or --status, not both.');
    await withInbox(ctx.env('replay'), (inbox) => {
      const which: ReplaySelection = opts.status ? { status: opts.status } : { eventIds: [...new Set(eventIds)] };
      return replay(ctx, inbox, which, opts);
    });
  });
}

async function replay(ctx: CommandContext, inbox: Inbox, which: ReplaySelection, opts: ReplayCommandOptions): Promise<void> {
  const scope = 'eventIds' in which ? '' : ` in state ${which.status}`;
  // Ids named on the command line that will not be re-queued: told at the end, and the exit code says so.
  const named = 'eventIds' in which ? which.eventIds : [];
  const reportMissing = async (requeued: ReadonlySet<string>) => {
    const missing = named.filter((id) => !requeued.has(id));
    if (missing.length === 0) return;
    await ctx.err(`not re-queued (unknown, or being processed now): ${sampleOf(missing, missing.length, BULK_DEFAULTS.sampleSize)}`);
    throw new SilentFailure();
  };

  // The sample holds every named id that would be re-queued, for a dry run to tell which would not.
  const { count, sample, through } = await inbox.previewReplay(which, Math.max(BULK_DEFAULTS.sampleSize, named.length));
  if (count === 0) {
    await ctx.out(`no events to re-queue${scope}`);
    return reportMissing(new Set());
  }
  await ctx.out(`${countOf(count, 'event')} to re-queue${scope}: ${sampleOf(sample.slice(0, BULK_DEFAULTS.sampleSize), count)}`);
  if (opts.dryRun) {
    await ctx.out('dry run: nothing changed');
    await reportMissing(new Set(sample));
    return;
  }
  await confirmBulk({ count, action: `re-queue ${countOf(count, 'event')}${scope}`, yes: opts.yes });

  const progress = startProgress('re-queued', count, opts.batchSize);
  const requeued = new Set<string>();
  let replayed = 0;
  let after: string | undefined;
  try {
    for (;;) {
      // Each batch checks the state again as it is written: an event that left it meanwhile stays as it is.
      const batch = await inbox.replayBatch(which, { limit: opts.batchSize, after, through: through ?? undefined });
      if (batch.visited === 0) break;
      replayed += batch.eventIds.length;
      if (named.length) for (const id of batch.eventIds) requeued.add(id);
      after = batch.last ?? undefined;
      progress.advance(batch.visited);
    }
  } finally {
    progress.stop();
  }
  await ctx.out(`re-queued ${countOf(replayed, 'event')}${opts.status ? ` from state ${opts.status}` : ''}`);
  await reportMissing(requeued);
}
