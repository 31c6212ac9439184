import { type Command, Option } from 'commander';
import { type ReplayableStatus, type ReplayEffects, type ReplaySelection, selectedStates } from '../store/maintenance.js';
import { parseSince } from '../sync/backfill.js';
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
  since?: string | undefined;
  until?: string | undefined;
  handler?: string | undefined;
  type?: string | undefined;
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
    .option('--since <time>', 'with --until: events first received at or after this time (2026-11-29T02:10:00Z)')
    .option(
      '--until <time>',
      'with --since: events first received before this time; without --status, those dead, invalid or in needs-review',
    )
    .option('--handler <name>', 'only events on which this handler failed (a failed run, or it gave up)')
    .option('--type <type>', 'only events of this type, e.g. INVOICE_PAID')
    .option('--account <id>', "only this account's events (docs/accounts.md); default every account's", accountOption)
    .option(
      '--redo-effects',
      "call the events' effect steps (ctx.effect) again, completed ones and those held for review included (asks first)",
    );
  addBulkOptions(command).action(async (eventIds: string[], opts: ReplayCommandOptions) => {
    const which = selectionOf(eventIds, opts);
    await withInbox(ctx.env('replay'), (inbox) => replay(ctx, inbox, which, opts));
  });
}

/** The selection the arguments name, or a UsageError saying what is missing or does not go together. */
export function selectionOf(eventIds: readonly string[], opts: ReplayCommandOptions): ReplaySelection {
  const redoEffects = opts.redoEffects === true;
  const filters = (['since', 'until', 'handler', 'type', 'account'] as const).filter((name) => opts[name] !== undefined);
  if (eventIds.length > 0) {
    if (opts.status) throw new UsageError('Give either event ids or --status, not both.');
    if (filters.length > 0)
      throw new UsageError(`Give either event ids or a selection (${filters.map((f) => `--${f}`).join(', ')}), not both.`);
    return { eventIds: [...new Set(eventIds)], redoEffects };
  }
  if ((opts.since === undefined) !== (opts.until === undefined)) throw new UsageError('--since and --until go together: give both.');
  const filter = { eventType: opts.type, handler: opts.handler, account: opts.account, redoEffects };
  if (opts.since !== undefined && opts.until !== undefined) {
    const since = moment('--since', opts.since);
    const until = moment('--until', opts.until);
    if (since.getTime() >= until.getTime()) throw new UsageError(`--until (${opts.until}) must be after --since (${opts.since}).`);
    return { ...filter, status: opts.status, since, until };
  }
  if (!opts.status)
    throw new UsageError('Name event ids to replay, or pass --status dead|invalid|ignored|done|needs-review, or --since and --until.');
  return { ...filter, status: opts.status };
}

/** A time given to `flag`, read as --since of backfill reads it (a date, or an ISO 8601 time with a zone). */
function moment(flag: string, text: string): Date {
  try {
    return parseSince(text);
  } catch (err) {
    throw new UsageError((err as Error).message.replace('--since', flag));
  }
}

async function replay(ctx: CommandContext, inbox: Inbox, which: ReplaySelection, opts: ReplayCommandOptions): Promise<void> {
  const scope = scopeOf(which);
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
  await ctx.out(`re-queued ${countOf(replayed, 'event')}${scope.replace(/^ in state/, ' from state')}`);
  await reportMissing(requeued);
}

/** The selection in words, for the lines replay prints: ` in state dead`, ` dead, invalid or needs-review received …`. */
function scopeOf(which: ReplaySelection): string {
  if ('eventIds' in which || 'events' in which) return which.account ? ` of account ${printable(which.account)}` : '';
  const states = selectedStates(which)!;
  const parts = [` in state ${states.length === 1 ? states[0] : `${states.slice(0, -1).join(', ')} or ${states.at(-1)}`}`];
  if ('since' in which && which.since && which.until)
    parts.push(`received from ${which.since.toISOString()} until ${which.until.toISOString()}`);
  if (which.eventType) parts.push(`of type ${printable(which.eventType)}`);
  if (which.handler) parts.push(`on which ${printable(which.handler)} failed`);
  if (which.account) parts.push(`of account ${printable(which.account)}`);
  return parts.join(' ');
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
