import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { storeEvent } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import type { EventStatus } from '../../src/store/schema.js';
import { cliNodeArgs, collect, runCli } from '../helpers/cli.js';
import { setState, statuses } from '../helpers/inbox.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';
import { seedDataDir } from '../helpers/pglite-template.js';

async function put(store: PayhooksDatabase, eventId: string, eventType: string, status: EventStatus, ageHours: number) {
  await storeEvent(store, { eventId, eventType, resourceKey: null, rawBody: JSON.stringify({ eventId, eventType }), headers: {} });
  await setState(store, eventId, status, {
    attempts: 5,
    last_error: 'boom',
    received_at: sql`now() - make_interval(hours => ${ageHours})`,
  });
}

/** Opens the embedded database in `dir`, runs `work`, closes it (the CLI cannot open it meanwhile). */
async function inDataDir<T>(dataDir: string, work: (store: PayhooksDatabase) => Promise<T>): Promise<T> {
  const store = await openDatabase({ dataDir });
  try {
    await migrate(store);
    return await work(store);
  } finally {
    await store.close();
  }
}

describe('replay, prune and events on the embedded database, as separate processes without a terminal', () => {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-bulk-'));
  const dataDir = join(dir, 'pgdata');
  seedDataDir(dataDir);
  const env = { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir };
  const cli = (args: string[]) => runCli(args, env, dir);
  const current = () => inDataDir(dataDir, statuses);
  const seeded = { d1: 'dead', d2: 'dead', d3: 'dead', o1: 'done', o2: 'done' };

  it('seeds five events: three dead invoices, two customer events done 40 days ago', { timeout: 60_000 }, async () => {
    await inDataDir(dataDir, async (store) => {
      await put(store, 'd1', 'INVOICE_PAID', 'dead', 3);
      await put(store, 'd2', 'INVOICE_PAID', 'dead', 2);
      await put(store, 'd3', 'INVOICE_PAID', 'dead', 1);
      await put(store, 'o1', 'CUSTOMER_CREATED', 'done', 40 * 24);
      await put(store, 'o2', 'CUSTOMER_CREATED', 'done', 40 * 24);
    });
    expect(await current()).toEqual(seeded);
  });

  it('events list --limit 2 says it shows 2 of 5, with the counts per state; --json stays one parseable array', {
    timeout: 60_000,
  }, async () => {
    const text = await cli(['events', 'list', '--limit', '2']);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines).toHaveLength(4); // header, two events, the footer
    expect(lines.at(-1)).toBe('showing 2 of 5 events (done 2, dead 3)');

    const json = await cli(['events', 'list', '--limit', '2', '--json']);
    expect(json.code).toBe(0);
    expect((JSON.parse(json.stdout) as { eventId: string }[]).map((e) => e.eventId)).toEqual(['o2', 'o1']);
    expect(json.stderr.trim()).toBe('showing 2 of 5 events (raise --limit to see more)');
  });

  it('replay --dry-run prints the count and the ids, and changes nothing', { timeout: 60_000 }, async () => {
    const result = await cli(['replay', '--status', 'dead', '--dry-run']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual(['3 events to re-queue in state dead: d1, d2, d3', 'dry run: nothing changed']);
    expect(await current()).toEqual(seeded);
  });

  it('a bulk replay without --yes and without a terminal refuses, says how to confirm, and changes nothing', {
    timeout: 60_000,
  }, async () => {
    const result = await cli(['replay', '--status', 'dead']);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('3 events to re-queue in state dead: d1, d2, d3');
    expect(result.stderr).toContain(
      'payhooks: Refusing to re-queue 3 events in state dead without confirmation, and there is no terminal to ask on. Pass --yes to confirm',
    );
    expect(await current()).toEqual(seeded);
  });

  it('prune --dry-run prints the count and the ids and changes nothing; prune without --yes refuses', { timeout: 90_000 }, async () => {
    const dry = await cli(['prune', '--older-than', '30d', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toMatch(
      /^2 finished events in \d+ history partitions older than 30d \(ending before \d{4}-\d\d-\d\dT[\d:.]+Z\) to drop:\n {2}inbox_events_p\d{8}t\d{6}: 2 finished events\n {2}and \d+ empty partitions\n/,
    );
    expect(dry.stdout).toContain('dry run: nothing changed');
    const refused = await cli(['prune', '--older-than', '30d']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/Refusing to drop 2 finished events older than 30d without confirmation.*Pass --yes to confirm/);
    expect(await current()).toEqual(seeded);
  });

  it('a single-id replay needs no confirmation and gives the event a fresh attempt count', { timeout: 60_000 }, async () => {
    const result = await cli(['replay', 'd1']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual(['1 event to re-queue: d1', 're-queued 1 event']);
    const d1 = await inDataDir(dataDir, (store) =>
      store.db.selectFrom('inbox_events').select(['status', 'attempts']).where('event_id', '=', 'd1').executeTakeFirstOrThrow(),
    );
    expect(d1).toEqual({ status: 'pending', attempts: 0 });
  });

  it('events stats counts per state and per type, and ages the oldest pending event', { timeout: 60_000 }, async () => {
    const json = await cli(['events', 'stats', '--json']);
    expect(json.code).toBe(0);
    const stats = JSON.parse(json.stdout) as { oldestPending: { eventId: string; ageMs: number; receivedAt: string } };
    expect(stats).toEqual({
      total: 5,
      byStatus: { pending: 1, processing: 0, done: 2, dead: 2, ignored: 0, invalid: 0, 'needs-review': 0 },
      byType: {
        CUSTOMER_CREATED: { pending: 0, processing: 0, done: 2, dead: 0, ignored: 0, invalid: 0, 'needs-review': 0, total: 2 },
        INVOICE_PAID: { pending: 1, processing: 0, done: 0, dead: 2, ignored: 0, invalid: 0, 'needs-review': 0, total: 3 },
      },
      oldestPending: {
        account: 'default',
        eventId: 'd1',
        receivedAt: expect.any(String),
        ageMs: expect.any(Number),
        resourceKey: null,
        queuedForResource: 1,
      },
    });
    expect(stats.oldestPending.ageMs).toBeGreaterThanOrEqual(3 * 3_600_000);
    expect(stats.oldestPending.ageMs).toBeLessThan(4 * 3_600_000);

    const text = await cli(['events', 'stats']);
    expect(text.stdout.split('\n').map((line) => line.trimEnd())).toEqual([
      'TYPE              PENDING  PROCESSING  DONE  DEAD  IGNORED  INVALID  NEEDS-REVIEW  TOTAL',
      'CUSTOMER_CREATED        0           0     2     0        0        0             0      2',
      'INVOICE_PAID            1           0     0     2        0        0             0      3',
      'TOTAL                   1           0     2     2        0        0             0      5',
      '',
      expect.stringMatching(/^oldest pending event: d1, received \S+Z \(3h \d+m ago\)$/),
      '',
    ]);
  });

  it('with --yes a bulk replay re-queues them all, in batches, with progress on stderr', { timeout: 60_000 }, async () => {
    const result = await cli(['replay', '--status', 'dead', '--yes', '--batch-size', '1']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n')).toEqual(['2 events to re-queue in state dead: d2, d3', 're-queued 2 events from state dead']);
    expect(result.stderr.trim().split('\n')).toEqual(['re-queued 1/2 events', 're-queued 2/2 events']);
    expect(await current()).toEqual({ ...seeded, d1: 'pending', d2: 'pending', d3: 'pending' });
  });

  it('with --yes prune drops the partitions of the old finished events and nothing else', { timeout: 60_000 }, async () => {
    const result = await cli(['prune', '--older-than', '30d', '--yes']);
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split('\n').at(-1)).toMatch(
      /^dropped 2 finished events: \d+ partitions whole, 0 partitions rebuilt with only their unfinished events; 0 unfinished events kept$/,
    );
    expect(await current()).toEqual({ d1: 'pending', d2: 'pending', d3: 'pending' });
  });
});

const hasScript = (() => {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!pgUrl || !hasScript)('a bulk replay on a terminal (script(1) gives the CLI a pseudo-terminal)', () => {
  const quote = (word: string) => `'${word.replaceAll("'", `'\\''`)}'`;

  /** Runs `payhooks <args>` on a pseudo-terminal and types `answer` at it. */
  function onTerminal(args: string[], env: Record<string, string>, answer: string) {
    // The fresh build when there is one, as runCli starts it (cliNodeArgs), instead of the sources through tsx.
    const command = [process.execPath, ...cliNodeArgs(args, env), ...args].map(quote).join(' ');
    const child = spawn('script', ['-qec', command, '/dev/null'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    // The terminal keeps what is typed before the question is asked, as a real one does.
    child.stdin.write(`${answer}\n`);
    return collect(child, 60_000);
  }

  it('asks y/N: "n" changes nothing and fails, "y" re-queues them with a progress bar', { timeout: 90_000 }, async () => {
    const schema = uniqueSchema('tty');
    const env = { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema };
    const store = await openDatabase({ url: pgUrl!, schema });
    try {
      await migrate(store);
      for (const id of ['t1', 't2', 't3']) await put(store, id, 'INVOICE_PAID', 'dead', 1);

      const declined = await onTerminal(['replay', '--status', 'dead'], env, 'n');
      expect(declined.code).toBe(1);
      expect(declined.stdout).toContain('Re-queue 3 events in state dead? [y/N]');
      expect(declined.stdout).toContain('Nothing changed.');
      expect(await statuses(store)).toEqual({ t1: 'dead', t2: 'dead', t3: 'dead' });

      const accepted = await onTerminal(['replay', '--status', 'dead', '--batch-size', '1'], env, 'y');
      expect(accepted.code).toBe(0);
      expect(accepted.stdout).toContain('re-queued');
      expect(accepted.stdout).toContain('3/3 events (100%');
      expect(accepted.stdout).toContain('re-queued 3 events from state dead');
      expect(await statuses(store)).toEqual({ t1: 'pending', t2: 'pending', t3: 'pending' });
    } finally {
      await dispose(store);
    }
  });
});
