import type { Command } from 'commander';
import type { PayhooksDatabase } from '../store/database.js';
import { dropHistoryPartitions, type KeptPartition, type PartitionDropReport, unfinishedCount } from '../store/history-partitions.js';
import { assertPruneAge, countPrunableOfAccount, pruneAccount, pruneCutoff } from '../store/maintenance.js';
import { accountOption } from './parse-options.js';
import type { CommandContext } from './command-context.js';
import { confirmBulk } from './confirm-bulk.js';
import { parseDuration } from '../internal/duration.js';
import { countOf } from './format.js';
import { withDatabase } from './with-database.js';

/** The options of `payhooks prune`. */
export interface PruneCommandOptions {
  olderThan: string;
  account?: string | undefined;
  dryRun: boolean;
  yes: boolean;
}

/**
 * Adds `payhooks prune --older-than AGE [--dry-run] [--yes]`: shows the history partitions that end before AGE ago,
 * with the finished events each holds and the unfinished ones that stay, asks (or needs --yes), then drops them whole,
 * or rebuilds those with unfinished events with those alone: disk comes back at once, with no dead rows left behind.
 */
export function addPruneCommand(program: Command, ctx: CommandContext): void {
  program
    .command('prune')
    .description(
      'drop the history (bodies, outcomes, attempts) of finished events in partitions older than the given age; unfinished, dead, invalid and needs-review events stay until resolved',
    )
    .requiredOption('--older-than <age>', 'e.g. 30d; any age: deduplication lives in the ledger, which prune keeps')
    .option(
      '--account <id>',
      "only this account's finished events (deleted row by row; without it, whole partitions of every account's history)",
      accountOption,
    )
    .option('--dry-run', 'print what it would drop and what it would keep; change nothing', false)
    .option('-y, --yes', 'drop without asking (needed when not on a terminal)', false)
    .action(async (opts: PruneCommandOptions) => {
      const olderThanMs = parseDuration(opts.olderThan);
      assertPruneAge(olderThanMs);
      await withDatabase(ctx.env('prune'), (store) =>
        opts.account === undefined ? prune(ctx, store, olderThanMs, opts) : pruneOneAccount(ctx, store, olderThanMs, opts.account, opts),
      );
    });
}

async function prune(ctx: CommandContext, store: PayhooksDatabase, olderThanMs: number, opts: PruneCommandOptions): Promise<void> {
  const before = await pruneCutoff(store, olderThanMs);
  const scope = `older than ${opts.olderThan} (ending before ${before.toISOString()})`;
  const preview = await dropHistoryPartitions(store, { before, dryRun: true });
  if (preview.dropped.length === 0 && preview.kept.length === 0) return ctx.out(`no history partitions ${scope}`);
  // Days with no events (a quiet weekend, the days a backdated import reached over) are counted, not listed.
  const empty = preview.dropped.filter((p) => p.events === 0).length;
  const lines = [
    ...preview.dropped.filter((p) => p.events > 0).map((p) => `  ${p.name}: ${countOf(p.events, 'finished event')}`),
    ...(empty > 0 ? [`  and ${countOf(empty, 'empty partition')}`] : []),
    ...preview.kept.map(keptLine),
  ];
  const events = finishedEvents(preview);
  await ctx.out(
    `${countOf(events, 'finished event')} in ${countOf(preview.dropped.length + preview.kept.length, 'history partition')} ${scope} to drop:\n${lines.join('\n')}`,
  );
  if (opts.dryRun) return ctx.out('dry run: nothing changed');
  await confirmBulk({ count: events, action: `drop ${countOf(events, 'finished event')} older than ${opts.olderThan}`, yes: opts.yes });
  const report = await dropHistoryPartitions(store, { before });
  const rebuilt = report.kept.filter((p) => p.compacted > 0);
  const stay = report.kept.reduce((sum, p) => sum + unfinishedCount(p.unresolved), 0);
  await ctx.out(
    `dropped ${countOf(finishedEvents(report), 'finished event')}: ${countOf(report.dropped.length, 'partition')} whole, ` +
      `${countOf(rebuilt.length, 'partition')} rebuilt with only their unfinished events; ${countOf(stay, 'unfinished event')} kept`,
  );
  if (report.busy.length > 0)
    await ctx.out(
      `${countOf(report.busy.length, 'partition')} left as they were: a long statement held the history's tables (${report.busy.map((p) => p.name).join(', ')}); run prune again`,
    );
}

/** `prune --account`: one account's finished events, deleted in batches (the others' history is left as it is). */
async function pruneOneAccount(
  ctx: CommandContext,
  store: PayhooksDatabase,
  olderThanMs: number,
  account: string,
  opts: PruneCommandOptions,
): Promise<void> {
  const before = await pruneCutoff(store, olderThanMs);
  const count = await countPrunableOfAccount(store, account, before);
  const scope = `of account ${account} received before ${before.toISOString()} (older than ${opts.olderThan})`;
  if (count === 0) return ctx.out(`no finished events ${scope}`);
  await ctx.out(`${countOf(count, 'finished event')} ${scope} to delete, with their outcomes, attempts and effect steps`);
  if (opts.dryRun) return ctx.out('dry run: nothing changed');
  await confirmBulk({ count, action: `delete ${countOf(count, 'finished event')} of account ${account}`, yes: opts.yes });
  const pruned = await pruneAccount(store, account, before);
  await ctx.out(
    `deleted ${countOf(pruned, 'finished event')} of account ${account}; their eventIds stay in the ledger (a redelivery is a duplicate)`,
  );
}

function keptLine(partition: KeptPartition): string {
  const why = Object.entries(partition.unresolved)
    .filter(([status]) => status !== 'queued')
    .map(([status, count]) => `${count.toLocaleString('en-US')} ${status}`)
    .join(', ');
  const drops = partition.compacted > 0 ? countOf(partition.compacted, 'finished event') : 'nothing to drop';
  return `  ${partition.name}: ${drops}; ${why} stay until resolved (payhooks events list --status dead|invalid|needs-review)`;
}

/** Finished events a report drops: whole partitions, and those taken out of partitions kept for unfinished ones. */
function finishedEvents(report: PartitionDropReport): number {
  return report.dropped.reduce((sum, p) => sum + p.events, 0) + report.kept.reduce((sum, p) => sum + p.compacted, 0);
}
