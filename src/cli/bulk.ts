import { type Command, Option } from 'commander';
import { positiveInt } from './parse-options.js';

/** How `replay` and `prune` work through many events: batch size (one transaction each) and sample size. */
export const BULK_DEFAULTS = { batchSize: 500, sampleSize: 10 } as const satisfies { batchSize: number; sampleSize: number };

/** The options every bulk command takes. */
export interface BulkOptions {
  dryRun: boolean;
  yes: boolean;
  batchSize: number;
}

/** Adds --dry-run, --yes and --batch-size to a bulk command. */
export function addBulkOptions(command: Command): Command {
  return command
    .option('--dry-run', 'print how many events it would change and a sample of their ids; change nothing', false)
    .option('-y, --yes', 'change more than one event without asking (needed when not on a terminal)', false)
    .addOption(
      new Option('--batch-size <n>', 'events per transaction').argParser(positiveInt('--batch-size')).default(BULK_DEFAULTS.batchSize),
    );
}
