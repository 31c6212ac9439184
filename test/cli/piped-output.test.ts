import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { type IncomingEvent, storeEvents } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { cliNodeArgs } from '../helpers/cli.js';
import { statuses } from '../helpers/inbox.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';
import { seedDataDir } from '../helpers/pglite-template.js';

// A pipe is asynchronous in Node: a CLI that exits before its reader has taken everything loses the rest. These
// run `payhooks … | reader` through a shell, a real pipe as in a script, into a reader that waits before reading
// and then reads slowly, so that most of the output is still waiting in the CLI's process when the command is done.

// Reads stdin a chunk at a time with pauses (after a first wait), and prints it all once stdin ends.
const SLOW_READER = `
const chunks = [];
process.stdin.pause();
setTimeout(() => process.stdin.resume(), 300);
process.stdin.on('data', (chunk) => {
  chunks.push(chunk);
  process.stdin.pause();
  setTimeout(() => process.stdin.resume(), 5);
});
process.stdin.on('end', () => process.stdout.write(Buffer.concat(chunks)));
`;

/** What one `payhooks … | reader` pipeline gave. */
interface Piped {
  /** The CLI's exit code. */
  code: number | undefined;
  /** What the reader printed: all it read, for the slow reader. */
  read: string;
  /** The CLI's stderr. */
  stderr: string;
}

const EXIT_MARK = /(?:^|\n)payhooks exited (\d+)\n$/;

/**
 * Runs `payhooks <args> | <reader>` in a shell (`slow`: the slow reader above; `stream`: which of the CLI's
 * outputs it reads, stdout by default), all killed as a group after `timeoutMs` (default 60 s). The CLI's exit
 * code comes back on stderr after its own output.
 */
function pipeCli(
  args: string[],
  env: Record<string, string>,
  reader: 'slow' | 'head -c 100' | 'head -n 1' | 'head -c 1',
  options: { stream?: 'stdout' | 'stderr'; timeoutMs?: number } = {},
): Promise<Piped> {
  const readerCommand = reader === 'slow' ? '"$PIPED_NODE" -e "$PIPED_READER"' : reader;
  // Piping stderr instead: stdout is thrown away, and stderr goes where stdout went.
  const redirect = options.stream === 'stderr' ? ' 2>&1 >/dev/null' : '';
  const script = `{ "$PIPED_NODE" $PIPED_CLI "$@"${redirect}; echo "payhooks exited $?" >&2; } | ${readerCommand}`;
  const child = spawn('sh', ['-c', script, 'sh', ...args], {
    env: {
      ...process.env,
      PAYHOOKS_LOG_LEVEL: 'warn',
      ...env,
      PIPED_NODE: process.execPath,
      // Paths without spaces (the repository's and tsx's file URL), split by the shell on purpose.
      PIPED_CLI: cliNodeArgs(args, env).join(' '),
      PIPED_READER: SLOW_READER,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // A group of its own, so that the shell, the CLI and the reader can be killed together.
    detached: true,
  });
  let read = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => (read += chunk));
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const killGroup = () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const timer = setTimeout(killGroup, options.timeoutMs ?? 60_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', () => {
      clearTimeout(timer);
      killGroup();
      const mark = EXIT_MARK.exec(stderr);
      resolve({ code: mark ? Number(mark[1]) : undefined, read, stderr: stderr.replace(EXIT_MARK, '').trimEnd() });
    });
  });
}

/** True when stderr shows a crash: an unhandled error's stack or Node's closing version line. */
function crashed(stderr: string): boolean {
  return /\n\s+at |Node\.js v\d|EPIPE|Unhandled|Error:/.test(stderr);
}

const SMALL_EVENTS = 4999;
const BIG_ID = 'evt_piped_big';

/** 4,999 ordinary events and one whose body alone is far past a pipe's 64 KB. */
function seedEvents(): IncomingEvent[] {
  const events: IncomingEvent[] = [];
  for (let i = 0; i < SMALL_EVENTS; i++) {
    const eventId = `evt_piped_${String(i).padStart(5, '0')}`;
    const data = { id: `cus_${i}`, username: `customer ${i}`, email: `customer${i}@example.com`, createdAt: '2026-11-20T10:00:00Z' };
    events.push({
      eventId,
      eventType: 'CUSTOMER_CREATED',
      resourceKey: `customer:cus_${i}`,
      rawBody: JSON.stringify({ eventId, eventType: 'CUSTOMER_CREATED', data }),
      headers: { 'content-type': 'application/json', 'webhook-id': eventId },
    });
  }
  const items = Array.from({ length: 4000 }, (_, i) => ({ quantity: i + 1, concept: { displayName: `item ${i}`, amount: 1000 + i } }));
  events.push({
    eventId: BIG_ID,
    eventType: 'INVOICE_CREATED',
    resourceKey: 'invoice:inv_big',
    rawBody: JSON.stringify({ eventId: BIG_ID, eventType: 'INVOICE_CREATED', data: { id: 'inv_big', items } }),
    headers: { 'content-type': 'application/json' },
  });
  return events;
}

const seeded = seedEvents();

/** The first few seeded eventIds missing from `printed` (none when the output is whole). */
function absent(printed: readonly string[]): string[] {
  const seen = new Set(printed);
  return seeded
    .filter((event) => !seen.has(event.eventId))
    .map((event) => event.eventId)
    .slice(0, 5);
}
const ROUNDS = 3;

/** A seeded database the CLI is pointed at. */
interface Seeded {
  env: Record<string, string>;
  /** Runs `work` on the database (the embedded one is opened for it and closed again: it admits one process). */
  withStore<T>(work: (store: PayhooksDatabase) => Promise<T>): Promise<T>;
  tearDown(): Promise<void>;
}

interface Target {
  name: string;
  available: boolean;
  /** Seeds the events. */
  setUp(): Promise<Seeded>;
}

const targets: Target[] = [
  {
    name: 'postgres',
    available: pgUrl !== null,
    async setUp() {
      const schema = uniqueSchema('piped');
      const store = await openDatabase({ url: pgUrl!, schema });
      await migrate(store);
      for (let i = 0; i < seeded.length; i += 500) await storeEvents(store, seeded.slice(i, i + 500));
      return {
        env: { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema },
        withStore: (work) => work(store),
        async tearDown() {
          await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
          await store.close();
        },
      };
    },
  },
  {
    name: 'pglite',
    available: true,
    async setUp() {
      const dataDir = seedDataDir(join(mkdtempSync(join(tmpdir(), 'payhooks-piped-')), 'pgdata'));
      const store = await openDatabase({ dataDir });
      try {
        await migrate(store);
        for (let i = 0; i < seeded.length; i += 500) await storeEvents(store, seeded.slice(i, i + 500));
      } finally {
        // Closed before the CLI runs: the embedded database admits one process.
        await store.close();
      }
      return {
        env: { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir },
        async withStore(work) {
          const opened = await openDatabase({ dataDir });
          try {
            return await work(opened);
          } finally {
            await opened.close();
          }
        },
        tearDown: async () => {},
      };
    },
  },
];

describe.each(targets.filter((t) => t.available))('CLI output piped into a slow reader ($name)', (target) => {
  let seededDb: Seeded | undefined;
  let env: Record<string, string> = {};
  let simulator: Simulator | undefined;

  beforeAll(async () => {
    seededDb = await target.setUp();
    env = seededDb.env;
  }, 120_000);
  afterAll(async () => {
    await simulator?.close();
    await seededDb?.tearDown();
  });

  it(`events list --limit 5000 --json arrives whole, ${ROUNDS} times out of ${ROUNDS}`, { timeout: 180_000 }, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const piped = await pipeCli(['events', 'list', '--limit', '5000', '--json'], env, 'slow');
      expect(piped.stderr).toBe('');
      expect(piped.code).toBe(0);
      const rows = JSON.parse(piped.read) as { eventId: string; status: string }[];
      expect(rows).toHaveLength(seeded.length);
      expect(absent(rows.map((row) => row.eventId))).toEqual([]);
      expect(rows.every((row) => row.status === 'pending')).toBe(true);
    }
  });

  it(`events list --limit 5000 prints all 5,000 rows and the count, ${ROUNDS} times out of ${ROUNDS}`, { timeout: 180_000 }, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const piped = await pipeCli(['events', 'list', '--limit', '5000'], env, 'slow');
      expect(piped.stderr).toBe('');
      expect(piped.code).toBe(0);
      const lines = piped.read.trimEnd().split('\n');
      // The header, a row per event, and the count.
      expect(lines).toHaveLength(seeded.length + 2);
      expect(lines[0]).toMatch(/^EVENT ID\s+TYPE/);
      expect(absent(lines.slice(1, -1).map((line) => line.split(/\s+/)[0]!))).toEqual([]);
      expect(lines.at(-1)).toMatch(/^showing 5000 of 5000 events/);
    }
  });

  it(`events show prints a large event whole, ${ROUNDS} times out of ${ROUNDS}`, { timeout: 120_000 }, async () => {
    const big = seeded.at(-1)!;
    expect(big.rawBody.length).toBeGreaterThan(4 * 65_536);
    for (let round = 0; round < ROUNDS; round++) {
      const piped = await pipeCli(['events', 'show', BIG_ID], env, 'slow');
      expect(piped.stderr).toBe('');
      expect(piped.code).toBe(0);
      const shown = JSON.parse(piped.read) as { eventId: string; rawBody: string };
      expect(shown.eventId).toBe(BIG_ID);
      // Compared as a flag: a failure would otherwise print 300 KB twice.
      expect(shown.rawBody === big.rawBody, `rawBody of ${shown.rawBody.length} characters, not ${big.rawBody.length}`).toBe(true);
    }
  });

  // On one database only: what it prints does not depend on which, and the 2,500 deliveries take a while.
  it.runIf(target === targets.find((t) => t.available))(
    `reconcile --dry-run --json against the simulator arrives whole, ${ROUNDS} times out of ${ROUNDS}`,
    {
      timeout: 180_000,
    },
    async () => {
      // 2,500 events the inbox never got: the endpoint is a black hole that answers 200 and keeps nothing (as a
      // proxy that drops them would), so each is sent once and recorded delivered, instead of nine refused attempts
      // each before the sender gives up (22,500 failed connections in this process). All missing from the inbox.
      const blackHole = await listen(createServer((req, res) => req.resume().on('end', () => res.end())));
      simulator = await startSimulator({ logger: pino({ level: 'silent' }), timeScale: 1_000_000 });
      const client = createClient({ apiKey: 'sk_test_piped', environment: simulator.url, rateLimit: false });
      const endpoint = await client.webhooks.create({
        url: `${blackHole.url}/webhooks`,
        description: 'black hole',
        enabledEvents: ['CUSTOMER_CREATED'],
      });
      for (let i = 0; i < 2500; i++) simulator.emit('CUSTOMER_CREATED');
      const sim = simulator;
      try {
        await waitFor(() => sim.webhookEvents({ status: 'delivered' }).length === 2500, 'all 2,500 sent into the black hole', 60_000);
      } finally {
        await blackHole.close();
      }
      const expected = new Set(sim.webhookEvents().map((record) => record.eventId));
      const reconcileEnv = { ...env, PAYHOOKS_API_KEY: 'sk_test_piped', PAYHOOKS_API_URL: simulator.url };
      for (let round = 0; round < ROUNDS; round++) {
        const piped = await pipeCli(['reconcile', '--dry-run', '--json'], reconcileEnv, 'slow');
        expect(piped.stderr).toBe('');
        expect(piped.code).toBe(0);
        expect(piped.read.length).toBeGreaterThan(3 * 65_536);
        const report = JSON.parse(piped.read) as { listed: number; endpointId: string; missing: { eventId: string }[] };
        expect(report).toMatchObject({ listed: 2500, endpointId: endpoint.id });
        const listed = new Set(report.missing.map((event) => event.eventId));
        expect([...expected].filter((id) => !listed.has(id)).slice(0, 5)).toEqual([]);
        expect(report.missing).toHaveLength(expected.size);
      }
    },
  );

  it('a reader that stops early (| head) ends the command quietly, without a stack trace', { timeout: 60_000 }, async () => {
    const json = await pipeCli(['events', 'list', '--limit', '5000', '--json'], env, 'head -c 100');
    expect(json.read).toHaveLength(100);
    expect(json.read.startsWith('[\n  {')).toBe(true);
    expect(crashed(json.stderr), json.stderr).toBe(false);
    expect(json.code).toBe(0);
    const table = await pipeCli(['events', 'list', '--limit', '5000'], env, 'head -n 1');
    expect(table.read).toMatch(/^EVENT ID\s+TYPE[^\n]*\n$/);
    expect(crashed(table.stderr), table.stderr).toBe(false);
    expect(table.code).toBe(0);
  });

  it('replay goes on to the end when the reader of its progress (stderr) stops early', { timeout: 120_000 }, async () => {
    // 2,000 dead events, re-queued 10 at a time: 200 progress lines on stderr, most after the reader has gone.
    const dead = seeded.slice(0, 2000).map((event) => event.eventId);
    await seededDb!.withStore(async (store) => {
      await store.db.updateTable('inbox_events').set({ status: 'dead' }).where('event_id', 'in', dead).execute();
      await store.db.deleteFrom('inbox_queue').where('event_id', 'in', dead).execute();
    });
    const piped = await pipeCli(['replay', '--status', 'dead', '--yes', '--batch-size', '10'], env, 'head -c 1', { stream: 'stderr' });
    expect(piped.read).toBe('r');
    expect(crashed(piped.stderr), piped.stderr).toBe(false);
    expect(piped.code).toBe(0);
    const after = await seededDb!.withStore((store) => statuses(store));
    expect(dead.filter((id) => after[id] !== 'pending')).toEqual([]);
  });
});
