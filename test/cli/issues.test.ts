// `payhooks issues list|show|ack|resolve|ignore|replay` on an embedded database on disk: failures made by a worker in
// this process, then the commands, most through the CLI's run() in this process, and those whose exit and piped
// output are the subject as real processes.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks } from '../../src/payhooks.js';
import { openDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { httpForwardSink } from '../../src/sync/http-forward.js';
import { runCli, runInProcess } from '../helpers/cli.js';
import { putEvents, statuses } from '../helpers/inbox.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { seedDataDir } from '../helpers/pglite-template.js';
import { waitFor } from '../helpers/wait.js';

class ErpRefusedError extends Error {}

describe('payhooks issues', () => {
  it('lists the issues, shows one, moves its state, and replays its affected events after the fix', { timeout: 180_000 }, async () => {
    const dataDir = seedDataDir(join(mkdtempSync(join(tmpdir(), 'payhooks-issues-')), 'pgdata'));
    // A sink's handler is named with the prefix its kind declares (the registry's, not written here).
    const erp = `${httpForwardSink.prefix}:erp`;
    let fixed = false;
    const work = async (run: (hooks: ReturnType<typeof createPayhooks>) => Promise<void>) => {
      const store = await openDatabase({ dataDir });
      const hooks = createPayhooks({
        database: store,
        logger: pino({ level: 'silent' }),
        worker: { pollIntervalMs: 20, maxAttempts: 1 },
      });
      hooks.on(
        'INVOICE_PAID',
        () => {
          if (!fixed) throw new ErpRefusedError('erp said 500');
        },
        { name: erp },
      );
      hooks.on(
        'CUSTOMER_CREATED',
        () => {
          throw new TypeError('cannot read properties of undefined');
        },
        { name: 'crm' },
      );
      try {
        await run(hooks);
      } finally {
        await hooks.stop(2000);
        await store.close();
      }
    };
    await work(async (hooks) => {
      const store = await hooks.ready();
      await putEvents(store, [
        ...Array.from({ length: 12 }, (_, i) => withOwnResource(exampleEvent('INVOICE_PAID', { eventId: `evt_cli_paid_${i}` }), `${i}`)),
        ...Array.from({ length: 2 }, (_, i) => withOwnResource(exampleEvent('CUSTOMER_CREATED', { eventId: `evt_cli_cust_${i}` }), `${i}`)),
      ]);
      await hooks.start();
      await waitFor(async () => {
        const all = Object.values(await statuses(store));
        return all.length === 14 && all.every((s) => s === 'dead');
      }, 'every event dead');
    });
    const env = { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir };

    const list = await runInProcess(['issues', 'list'], env);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^#\s+STATE\s+SOURCE\s+ERROR CLASS\s+EVENT TYPE\s+EVENTS\s+NOT DONE\s+FAILURES\s+LAST SEEN$/);
    expect(lines).toHaveLength(3);
    expect(list.stdout).toMatch(/open\s+sink forward erp\s+ErpRefusedError\s+INVOICE_PAID\s+12\s+12\s+12\s/);
    expect(list.stdout).toMatch(/open\s+handler crm\s+TypeError\s+CUSTOMER_CREATED\s+2\s+2\s+2\s/);

    const json = await runInProcess(['issues', 'list', '--json'], env);
    const issues = JSON.parse(json.stdout) as { id: string; handler: string; source: unknown; affectedEvents: number }[];
    expect(issues.map((i) => [i.handler, i.affectedEvents])).toEqual(
      expect.arrayContaining([
        [erp, 12],
        ['crm', 2],
      ]),
    );
    const big = issues.find((i) => i.handler === erp)!;
    const small = issues.find((i) => i.handler === 'crm')!;
    expect(big.source).toEqual({ kind: 'sink', prefix: 'forward', name: 'erp' });

    const show = await runInProcess(['issues', 'show', big.id, '--limit', '5'], env);
    expect(show.stdout).toMatch(new RegExp(`^issue:\\s+#${big.id} open$`, 'm'));
    expect(show.stdout).toMatch(/^last error:\s+.*erp said 500/m);
    expect(show.stdout.match(/evt_cli_paid_\d+\s+default\s+INVOICE_PAID\s+dead/g)).toHaveLength(5);
    expect(show.stdout).toContain('showing the first 5');
    const shown = JSON.parse((await runInProcess(['issues', 'show', big.id, '--json', '--limit', '100'], env)).stdout);
    expect(shown.events.map((e: { eventId: string }) => e.eventId).sort()).toEqual(
      Array.from({ length: 12 }, (_, i) => `evt_cli_paid_${i}`).sort(),
    );

    expect((await runInProcess(['issues', 'ack', big.id], env)).stdout.trim()).toBe(
      `issue #${big.id} acknowledged: sink forward erp, ErpRefusedError, INVOICE_PAID`,
    );
    expect((await runInProcess(['issues', 'ignore', small.id], env)).stdout).toContain(`issue #${small.id} ignored`);
    const refused = await runInProcess(['issues', 'ack', small.id], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`Issue #${small.id} is ignored: ack applies to an issue that is open, acknowledged.`);
    const missing = await runInProcess(['issues', 'resolve', '424242'], env);
    expect([missing.code, missing.stderr.trim()]).toEqual([1, 'payhooks: No issue #424242.']);
    expect((await runInProcess(['issues', 'list', '--state', 'open'], env)).stdout.trim()).toBe('no open issues');

    // A dry run counts; a real process without a terminal refuses the bulk change without --yes, and changes nothing.
    const dry = await runInProcess(['issues', 'replay', big.id, '--dry-run'], env);
    expect(dry.stdout).toMatch(
      new RegExp(`^12 events to re-queue for issue #${big.id} \\(sink forward erp, ErpRefusedError, INVOICE_PAID\\): evt_cli_paid_`),
    );
    expect(dry.stdout).toContain('dry run: nothing changed');
    const noTerminal = await runCli(['issues', 'replay', big.id], env);
    expect(noTerminal.code).toBe(1);
    expect(noTerminal.stderr).toContain('Pass --yes to confirm');

    // Fixed: replay re-queues the 12, the worker makes them done, the issue is resolved; the crm events stay dead.
    fixed = true;
    const replay = await runCli(['issues', 'replay', big.id, '--yes', '--json'], env);
    expect(replay.code).toBe(0);
    const replayed = JSON.parse(replay.stdout);
    expect([replayed.count, replayed.replayed, replayed.eventIds.length, replayed.state]).toEqual([12, 12, 12, 'resolved']);
    await work(async (hooks) => {
      const store = await hooks.ready();
      await hooks.start();
      await waitFor(async () => (await getEvent(store, 'evt_cli_paid_11'))?.status === 'done', 'the replayed events done');
      await waitFor(async () => Object.values(await statuses(store)).filter((s) => s === 'done').length === 12, 'all 12 done');
      expect((await getEvent(store, 'evt_cli_cust_0'))?.status).toBe('dead');
    });
    const after = await runCli(['issues', 'list', '--json'], env);
    const states = Object.fromEntries(
      (JSON.parse(after.stdout) as { handler: string; state: string; unfinishedEvents: number }[]).map((i) => [
        i.handler,
        [i.state, i.unfinishedEvents],
      ]),
    );
    expect(states).toEqual({ [erp]: ['resolved', 0], crm: ['ignored', 2] });
  });
});
