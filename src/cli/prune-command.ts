import type { Command } from 'commander';
import type { PayhooksDatabase } from '../store/database.js';
import { dropHistoryPartitions, type KeptPartition, type PartitionDropReport } from '../store/history-partitions.js';
import { assertPruneAge, pruneCutoff } from '../store/maintenance.js';
import type { CommandContext } from './command-context.js';
import { confirmBulk } from './confirm-bulk.js';
import { parseDuration } from '../internal/duration.js';
import { countOf } from './format.js';
import { withDatabase } from './with-database.js';

/** The options of `payhooks prune`. */
export interface PruneCommandOptions {
  olderThan: string;
  dryRun: boolean;
  yes: boolean;
}

/**
 * Adds `payhooks prune --older-than AGE [--dry-run] [--yes]`: shows the history partitions that end before AGE ago
 * (with the finished events each holds) and those kept for events that are not finished, asks (or needs --yes), then
 * drops them whole: disk comes back at once, with no dead rows left behind.
 */
export function addPruneCommand(program: Command, ctx: CommandContext): void {
  program
    .command('prune')
    .description(
      'drop the history partitions older than the given age (bodies, outcomes, attempts); a partition holding an unfinished, dead or invalid event is kept until it is resolved',
    )
    .requiredOption('--older-than <age>', 'e.g. 30d; any age: deduplication lives in the ledger, which prune keeps')
    .option('--dry-run', 'print what it would drop and what it would keep; change nothing', false)
    .option('-y, --yes', 'drop without asking (needed when not on a terminal)', false)
    .action(async (opts: PruneCommandOptions) => {
      const olderThanMs = parseDuration(opts.olderThan);
      assertPruneAge(olderThanMs);
      await withDatabase(ctx.env('prune'), (store) => prune(ctx, store, olderThanMs, opts));
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
  const events = totalEvents(preview);
  await ctx.out(
    `${countOf(preview.dropped.length, 'history partition')} ${scope} to drop, holding ${countOf(events, 'finished event')}:\n${lines.join('\n')}`,
  );
  if (opts.dryRun) return ctx.out('dry run: nothing changed');
  await confirmBulk({ count: events, action: `drop ${countOf(events, 'finished event')} older than ${opts.olderThan}`, yes: opts.yes });
  const report = await dropHistoryPartitions(store, { before });
  await ctx.out(
    `dropped ${countOf(report.dropped.length, 'partition')} (${countOf(totalEvents(report), 'finished event')}); ` +
      `kept ${countOf(report.kept.length, 'partition')} for unfinished events`,
  );
}

function keptLine(partition: KeptPartition): string {
  const why = Object.entries(partition.unresolved)
    .map(([status, count]) => `${count.toLocaleString('en-US')} ${status}`)
    .join(', ');
  return `  ${partition.name}: kept, it holds ${why} (payhooks events list --status dead|invalid; replay or resolve them, then prune again)`;
}

function totalEvents(report: PartitionDropReport): number {
  return report.dropped.reduce((sum, partition) => sum + partition.events, 0);
}
