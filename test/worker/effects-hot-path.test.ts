// Issue 25: ctx.effect costs nothing on the hot path unless a handler calls it. The same drain (events put one at a
// time, each run to done) runs three times, each on a fresh database, through a store whose Kysely logs every statement
// it runs (raw SQL included): with a handler that takes no ctx, with one whose ctx.effect path exists but is not taken,
// and with one that calls a step. The first two run the same statements (besides the claims and the reads of the
// accounts, whose number follows the clock); the third runs exactly two more per event (the step's intent and its
// result), which shows that the log sees a statement added.
import { type KyselyPlugin, PostgresQueryCompiler } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import type { EventHandler } from '../../src/worker/handlers.js';
import { putEvent } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const EVENTS = 6;

/** `store` with a Kysely that appends the SQL of each statement it runs to `log`. */
function logged(store: PayhooksDatabase, log: string[]): PayhooksDatabase {
  const compiler = new PostgresQueryCompiler();
  const plugin: KyselyPlugin = {
    transformQuery(args) {
      const text = compiler.compileQuery(args.node, args.queryId).sql.replace(/\s+/g, ' ').trim();
      // Each drain has a schema of its own (on the server): named alike, so that drains compare.
      log.push(text.replaceAll(`"${store.schema}"`, '"<schema>"'));
      return args.node;
    },
    async transformResult(args) {
      return args.result;
    },
  };
  return {
    kind: store.kind,
    schema: store.schema,
    db: store.db.withPlugin(plugin),
    discardConnections: () => store.discardConnections(),
    withDeadline: (deadline) => logged(store.withDeadline(deadline), log),
    listen: (channel, onNotify) => store.listen(channel, onNotify),
    close: () => store.close(),
  };
}

type PaidHandler = EventHandler<'INVOICE_PAID'>;

describe.each(backends)('the hot path with ctx.effect on $name', (backend) => {
  /** Drains EVENTS events one at a time through `handler` on a fresh database; resolves to the statements run. */
  const drain = async (handler: PaidHandler): Promise<string[]> => {
    const store = await backend.open();
    const log: string[] = [];
    const hooks = createPayhooks({
      database: logged(store, log),
      logger: pino({ level: 'silent' }),
      worker: { concurrency: 1, pollIntervalMs: 50 },
    });
    hooks.on('INVOICE_PAID', handler, { name: 'fees' });
    try {
      await hooks.start();
      for (let i = 0; i < EVENTS; i++) {
        const eventId = `evt_hot_${i}`;
        await putEvent(store, exampleEvent('INVOICE_PAID', { eventId }));
        await waitFor(async () => (await getEvent(store, eventId))?.status === 'done', `${eventId} done`);
      }
      await hooks.stop(2000);
    } finally {
      await dispose(store);
    }
    return log;
  };

  it.skipIf(!backend.available)(
    'a handler whose ctx.effect is not called runs the statements of one without it; a called step adds exactly two per event',
    { timeout: 120_000 },
    async () => {
      const plain = await drain(async () => undefined);
      const unused = await drain(async (event, ctx) => {
        if (event.eventId === 'evt_never') await ctx.effect('late-fee', () => 1);
      });
      const used = await drain(async (_event, ctx) => {
        await ctx.effect('late-fee', () => 1);
      });
      // Rows of effect_steps read or written (the worker's upkeep makes its partitions ahead, as for the history, under a
      // lock of the partitioned tables: neither reads nor writes a row).
      const touchesSteps = (statement: string) => statement.includes('effect_steps') && !/^(create|drop|alter|lock) /i.test(statement);
      // The claim (src/store/claim.ts) runs on every wake, a notification or a poll, and reads the accounts again once
      // a second (store/accounts.ts onlyAccount): as often as time passes, whatever the handler does. The rest is per
      // event and per start: compared one for one.
      const clocked = /"claim_events(_single)?"\(|"accounts" limit 2$/;
      const perEvent = (log: string[]) => log.filter((statement) => !clocked.test(statement)).sort();
      expect(unused.filter(touchesSteps)).toEqual([]);
      expect(perEvent(unused)).toEqual(perEvent(plain));
      expect(used.filter(touchesSteps)).toHaveLength(2 * EVENTS);
      expect(perEvent(used).length).toBe(perEvent(plain).length + 2 * EVENTS);
    },
  );
});
