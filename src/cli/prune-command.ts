import type { Command } from 'commander';
import type { PayhooksDatabase } from '../store/database.js';
import { assertPruneAge, countPrunable, pruneBatch, pruneCutoff, samplePrunable } from '../store/maintenance.js';
import { addBulkOptions, BULK_DEFAULTS, type BulkOptions } from './bulk.js';
import type { CommandContext } from './command-context.js';
import { confirmBulk } from './confirm-bulk.js';
import { parseDuration } from '../internal/duration.js';
import { countOf, sampleOf } from './format.js';
import { startProgress } from './progress.js';
import { withDatabase } from './with-database.js';

/** The options of `payhooks prune`. */
export interface PruneCommandOptions extends BulkOptions {
  olderThan: string;
}

/**
 * Adds `payhooks prune --older-than AGE [--dry-run] [--yes] [--batch-size N]`: shows how many finished
 * events it would delete with a sample of their ids, asks (or needs --yes) when there is more than one, then
 * deletes them in batches with progress.
 */
export function addPruneCommand(program: Command, ctx: CommandContext): void {
  const command = program
    .command('prune')
    .description('delete finished (done, ignored) events older than the given age; never unfinished, dead or invalid ones')
    .requiredOption('--older-than <age>', 'minimum age, e.g. 30d; any age (deduplication lives in the ledger, which prune keeps)');
  addBulkOptions(command).action(async (opts: PruneCommandOptions) => {
    const olderThanMs = parseDuration(opts.olderThan);
    assertPruneAge(olderThanMs);
    await withDatabase(ctx.env('prune'), (store) => prune(ctx, store, olderThanMs, opts));
  });
}

async function prune(ctx: CommandContext, store: PayhooksDatabase, olderThanMs: number, opts: PruneCommandOptions): Promise<void> {
  const cutoff = await pruneCutoff(store, olderThanMs);
  const scope = `older than ${opts.olderThan} (received before ${cutoff.toISOString()})`;
  const count = await countPrunable(store, cutoff);
  if (count === 0) return ctx.out(`no finished events ${scope}`);
  const sample = await samplePrunable(store, cutoff, BULK_DEFAULTS.sampleSize);
  await ctx.out(`${countOf(count, 'finished event')} ${scope} to delete: ${sampleOf(sample, count)}`);
  if (opts.dryRun) return ctx.out('dry run: nothing changed');
  await confirmBulk({ count, action: `delete ${countOf(count, 'finished event')} older than ${opts.olderThan}`, yes: opts.yes });

  const progress = startProgress('deleted', count, opts.batchSize);
  let deleted = 0;
  try {
    for (let batch = await pruneBatch(store, cutoff, opts.batchSize); batch > 0; batch = await pruneBatch(store, cutoff, opts.batchSize)) {
      deleted += batch;
      progress.advance(batch);
    }
  } finally {
    progress.stop();
  }
  await ctx.out(`deleted ${countOf(deleted, 'finished event')} older than ${opts.olderThan}`);
}
