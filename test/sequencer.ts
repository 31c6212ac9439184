// The order in which `npm test` starts its files (vitest.config.ts). Vitest's own order sorts by the durations of the
// last run on this checkout, else by file size: a clean clone, as CI runs, has no last run, and size says little of how
// long a file takes here (a 5 KB partition scenario runs 23 s; an 18 KB file of sink plugins, 9 s). The whole suite took
// 380 s on a clean clone against 339 s on a checkout with vitest's cache. This order is the same on both: longest first,
// so that the run ends on short files and no worker is left finishing a long one alone.
import { statSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The tiers in the order their files are queued (soak runs after the others anyway: its groupOrder). A worker runs the
 * files of one tier only, and the pool starts a new one when the next file queued is of another tier, so the files of
 * a tier stay together. The db tier first, as vitest's own order (by tier name) had it: e2e first was no faster (367 s,
 * against 339 to 375 s in runs of db first).
 */
const TIER_ORDER = ['db', 'e2e', 'unit', 'soak'];

/**
 * Seconds each of the longer files took in a whole run on the 2-core machine (27 Nov 2026), three files at a time.
 * Only the order matters: a file not listed is placed by its size, as if 1 KB took a second (most short files are
 * under 8 KB and 8 s). Re-measure when a file's time changes by much: `npx vitest run --reporter=json`.
 */
export const MEASURED_SECONDS: Readonly<Record<string, number>> = {
  // Alone, 29 Nov 2026: the HA pair's start (about 40 s) and two loads of 12 s with their failovers and drains.
  'test/store/ha-failover.test.ts': 115,
  'test/worker/effects-chaos.test.ts': 60,
  'test/receiver/two-receivers.test.ts': 26,
  'test/cli/init.test.ts': 44,
  // Measured alone (29 Nov 2026): 35 s of deliveries and the drain after them.
  'test/store/partition-upkeep-beside-outcomes.test.ts': 38,
  'test/cli/piped-output.test.ts': 42,
  'test/cli/serve-broker-faults.test.ts': 35,
  'test/console/admin-mount.test.ts': 31,
  'test/receiver/ack-budget.test.ts': 29,
  'test/worker/processes.test.ts': 25,
  'test/cli/partition.test.ts': 23,
  'test/receiver/bounded-memory.test.ts': 21,
  'test/cli/bulk-commands.test.ts': 21,
  'test/cli/serve.test.ts': 20,
  'test/sync/http-forward.test.ts': 19,
  'test/cli/backfill.test.ts': 18,
  'test/cli/serve-aborted-requests.test.ts': 18,
  'test/sync/broker-faults.test.ts': 18,
  'test/cli/verify.test.ts': 17,
  'test/sync/backfill.test.ts': 17,
  'test/store/history-partitions.test.ts': 17,
  'test/worker/worker.test.ts': 16,
  'test/sync/brokers.test.ts': 15,
  'test/sync/reconcile.test.ts': 14,
  'test/sync/scripted-day.test.ts': 13,
  'test/examples/direct-debit.test.ts': 13,
  'test/examples/standalone-sync.test.ts': 12,
  'test/cli/cli.test.ts': 12,
  'test/cli/config-at-start.test.ts': 12,
  'test/store/prune-replay-race.test.ts': 11,
  'test/store/store.test.ts': 11,
  'test/simulator/cli.test.ts': 10,
  'test/worker/effects.test.ts': 10,
  'test/store/operator-queries.test.ts': 9,
  'test/worker/poison-handlers.test.ts': 9,
  'test/cli/prune-beside-replay.test.ts': 9,
  'test/cli/serve-worker-options.test.ts': 9,
  'test/sync/sink-plugins.test.ts': 9,
  'test/worker/per-handler-order.test.ts': 9,
  'test/examples/crm-connector.test.ts': 9,
  'test/client/retries.test.ts': 8,
  'test/packaging.test.ts': 8,
  // Files whose size would place them too early: their commands run in-process now.
  'test/cli/doctor.test.ts': 5,
  'test/cli/beside-serve.test.ts': 5,
  'test/cli/migrate-dir.test.ts': 5,
  'test/cli/data-dir-symlink.test.ts': 4,
};

/** How long `file` (a path from the repository's root) is expected to take, in seconds, for ordering only. */
export function expectedSeconds(file: string, root: string): number {
  return MEASURED_SECONDS[file] ?? statSync(`${root}/${file}`).size / 1024;
}

/** Tier by tier ({@link TIER_ORDER}), and within a tier the longest expected first. */
export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const tierRank = (spec: TestSpecification) => {
      const rank = TIER_ORDER.indexOf(spec.project.name);
      return rank === -1 ? TIER_ORDER.length : rank;
    };
    const seconds = new Map(files.map((spec) => [spec, expectedSeconds(relative(root, spec.moduleId).split('\\').join('/'), root)]));
    return [...files].sort((a, b) => tierRank(a) - tierRank(b) || seconds.get(b)! - seconds.get(a)!);
  }
}
