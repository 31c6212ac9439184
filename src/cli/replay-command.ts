import { type Command, Option } from 'commander';
import type { ReplayableStatus, ReplayEffects, ReplaySelection } from '../store/maintenance.js';
import { addBulkOptions, BULK_DEFAULTS, type BulkOptions } from './bulk.js';
import { SilentFailure, UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { confirmBulk } from './confirm-bulk.js';
import { countOf, printable, sampleOf } from './format.js';
import type { Inbox } from './inbox.js';
import { startProgress } from './progress.js';
import { withInbox } from './with-inbox.js';
import { accountOption } from './parse-options.js';

const REPLAYABLE: readonly ReplayableStatus[] = ['dead', 'invalid', 'ignored', 'done', 'needs-review'];

/** The options of `payhooks replay`. */
export interface ReplayCommandOptions extends BulkOptions {
  status?: ReplayableStatus | undefined;
  account?: string | undefined;
  redoEffects?: boolean | undefined;
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
    .addOption(new Option('--status <status>', 're-queue every event in this state').choices(REPLAYABLE))
    .option('--account <id>', "only this account's events (docs/accounts.md); default every account's", accountOption)
    .option(
      '--redo-effects',
      "call the events' effect steps (ctx.effect) again, completed ones and those held for review included (asks first)",
    );
  addBulkOptions(command).action(async (eventIds: string[], opts: ReplayCommandOptions) => {
    if (eventIds.length === 0 && !opts.status)
      throw new UsageError('Name event ids to replay, or pass --status dead|invalid|ignored|done.');
    if (eventIds.length > 0 && opts.status) throw new UsageError('Give either event ids or --status, not both.');
    await withInbox(ctx.env('replay'), (inbox) => {
      const redoEffects = opts.redoEffects === true;
      const how = { account: opts.account, redoEffects };
      const which: ReplaySelection = opts.status ? { status: opts.status, ...how } : { eventIds: [...new Set(eventIds)], ...how };
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
  const { count, sample, through, effects } = await inbox.previewReplay(which, Math.max(BULK_DEFAULTS.sampleSize, named.length));
  if (count === 0) {
    await ctx.out(`no events to re-queue${scope}`);
    return reportMissing(new Set());
  }
  await ctx.out(`${countOf(count, 'event')} to re-queue${scope}: ${sampleOf(sample.slice(0, BULK_DEFAULTS.sampleSize), count)}`);
  const redo = which.redoEffects === true;
  for (const line of effectLines(effects, redo)) await ctx.out(line);
  if (opts.dryRun) {
    await ctx.out('dry run: nothing changed');
    await reportMissing(new Set(sample));
    return;
  }
  // Calling effects again (an invoice, a payment) cannot be undone: asked even for one event.
  const again = effects.completed + effects.needsReview;
  await confirmBulk({
    count,
    action: `re-queue ${countOf(count, 'event')}${scope}${redo && again > 0 ? ` and call ${countOf(again, 'effect step')} again` : ''}`,
    yes: opts.yes,
    always: redo && again > 0,
  });

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

/** What the replay does with the events' effect steps: which are skipped, which run again (docs/effects.md#replay). */
function effectLines(effects: ReplayEffects, redo: boolean): string[] {
  const total = effects.completed + effects.needsReview + effects.notCompleted;
  if (total === 0) return [];
  const lines: string[] = [];
  if (effects.completed > 0)
    lines.push(
      redo
        ? `effect steps: ${countOf(effects.completed, 'completed step')} will be called again (--redo-effects)`
        : `effect steps: ${countOf(effects.completed, 'completed step')} will be skipped (their recorded results are reused; --redo-effects calls them again)`,
    );
  if (effects.needsReview > 0)
    lines.push(
      redo
        ? `effect steps: ${countOf(effects.needsReview, 'step')} held for review will be called again (--redo-effects)`
        : `effect steps: ${countOf(effects.needsReview, 'step')} held for review stay held (payhooks effects resolve EVENT STEP --done|--redo)`,
    );
  if (effects.notCompleted > 0)
    lines.push(`effect steps: ${countOf(effects.notCompleted, 'step')} that did not complete will be called again`);
  for (const step of effects.sample)
    lines.push(`  ${printable(step.eventId)} ${printable(step.handler)} ${printable(JSON.stringify(step.step))}: ${step.state}`);
  if (effects.sample.length < total) lines.push(`  … and ${total - effects.sample.length} more`);
  return lines;
}
