// `payhooks prune` and `payhooks replay --status done` started together, as two operators would, on one PostgreSQL
// database: the events the replay says it re-queued must all still be there, waiting in the queue.
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { collect, spawnCli } from '../helpers/cli.js';
import { oldDoneEvents, queuedOf } from '../helpers/old-events.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';

const ROUNDS = 3;
const EVENTS_PER_ROUND = 4000;

/** The number in a line such as `re-queued 1,234 events from state done`. */
function countIn(output: string, pattern: RegExp): number {
  const match = pattern.exec(output);
  if (!match) throw new Error(`no line matching ${pattern} in:\n${output}`);
  return Number(match[1]!.replaceAll(',', ''));
}

describe.skipIf(!pgUrl)('prune and a bulk replay run together as processes on PostgreSQL', () => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it(`${ROUNDS} rounds: every event the replay reports re-queued is still there with its queue row`, { timeout: 240_000 }, async () => {
    const schema = uniqueSchema('prune_replay');
    store = await openDatabase({ url: pgUrl!, schema });
    await migrate(store);
    const env = { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema };
    for (let round = 0; round < ROUNDS; round++) {
      // A day of its own each round.
      const ids = await oldDoneEvents(store, `evt_p${round}`, EVENTS_PER_ROUND, 40 + round);
      const pruning = collect(spawnCli(['prune', '--older-than', '30d', '--yes'], env), 120_000);
      const replaying = collect(spawnCli(['replay', '--status', 'done', '--yes', '--batch-size', '100'], env), 120_000);
      const [pruned, replayed] = await Promise.all([pruning, replaying]);
      expect(replayed.code, `round ${round}, replay: ${replayed.stderr}`).toBe(0);
      const requeued = replayed.stdout.includes('no events to re-queue') ? 0 : countIn(replayed.stdout, /re-queued ([\d,]+) events?/);
      // First what matters most: nothing the replay reported was deleted, queue row included.
      expect(await queuedOf(store, ids), `round ${round}: the ${requeued} events re-queued`).toEqual({
        queued: requeued,
        existing: requeued,
      });
      expect(pruned.code, `round ${round}, prune: ${pruned.stderr}`).toBe(0);
      const dropped = pruned.stdout.includes('no history partitions') ? 0 : countIn(pruned.stdout, /dropped ([\d,]+) finished events?/);
      // Each event went one way or the other: re-queued (and kept), or dropped; never both. A partition the replay
      // reached first is rebuilt with the re-queued events alone.
      expect(dropped, `round ${round}: dropped`).toBe(EVENTS_PER_ROUND - requeued);
    }
  });
});
