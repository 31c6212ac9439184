import { existsSync, mkdtempSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/main.js';
import { startProgress } from '../../src/cli/progress.js';
import { createClient } from '../../src/client/index.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { collect, runCli, runInProcess, spawnCli } from '../helpers/cli.js';
import { actualMirror, expectedMirror } from '../helpers/mirror.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { waitFor } from '../helpers/wait.js';

const COUNT = 1000;
/** Each list request is held this long, so that a run of 20 pages lasts long enough to be killed part-way. */
const LIST_DELAY_MS = 150;

/** Creates `count` customers, each with one invoice of 1 to 3 items, `concurrency` calls at a time. */
async function seed(simulator: Simulator, count: number, concurrency = 50): Promise<void> {
  const client = createClient({ apiKey: 'sk_test_seed', environment: simulator.url, rateLimit: false });
  for (let first = 0; first < count; first += concurrency) {
    const batch = Array.from({ length: Math.min(concurrency, count - first) }, (_, i) => first + i);
    await Promise.all(
      batch.map(async (n) => {
        const customer = await client.customers.create({ username: `cli${n}`, email: `cli${n}@example.com` });
        await client.invoices.create({
          customerId: customer.id,
          dueDate: '2026-12-01T06:00:00Z',
          items: Array.from({ length: 1 + (n % 3) }, (_, item) => ({
            quantity: 1,
            concept: { displayName: `Concept ${n}.${item}`, amount: 5_000 + n, currency: 'MXN' },
          })),
        });
      }),
    );
  }
}

/** A loopback HTTP proxy in front of the simulator that records every list request and holds it a little. */
interface ListProxy {
  url: string;
  /** The list requests that reached it, in order. */
  lists: { path: string; skip: number }[];
  close(): Promise<void>;
}

async function startListProxy(target: string): Promise<ListProxy> {
  const lists: ListProxy['lists'] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://proxy.invalid');
    const isList = req.method === 'GET' && (url.pathname === '/v1/customers' || url.pathname === '/v1/invoices');
    if (isList) lists.push({ path: url.pathname, skip: Number(url.searchParams.get('skip') ?? 0) });
    res.on('error', () => undefined);
    setTimeout(
      () => {
        const upstream = request(`${target}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        upstream.on('error', () => res.destroy());
        req.pipe(upstream);
      },
      isList ? LIST_DELAY_MS : 0,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    lists,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('startProgress', () => {
  it('without a terminal writes one plain line per step, in the unit given, from where a resumed job starts', () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const customers = startProgress('read', 1000, 100, stream, { unit: 'customers', startAt: 300 });
    customers.advance(100);
    customers.advance(100);
    customers.stop();
    const events = startProgress('deleted', 1000, 500, stream);
    events.advance(500);
    expect(lines).toEqual(['read 400/1000 customers\n', 'read 500/1000 customers\n', 'deleted 500/1000 events\n']);
  });
});

describe('payhooks backfill: bad input', () => {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-backfill-'));
  const dataDir = join(dir, 'pgdata');
  // The embedded database in a folder that does not exist yet: if anything opened it, the folder would appear.
  const env = { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir, PAYHOOKS_API_KEY: 'sk_test_cli', PAYHOOKS_API_URL: 'http://127.0.0.1:9' };

  it('--help names the two resources it can read, and why no others', async () => {
    let text = '';
    expect(await run(['backfill', '--help'], (out) => (text += out))).toBe(0);
    // Commander wraps the options' descriptions at the terminal's width.
    text = text.replace(/\s+/g, ' ');
    expect(text).toContain('--resource <names>');
    expect(text).toContain('from customers, invoices (the only resources the API lists)');
    expect(text).toContain('Only customers and invoices can be backfilled');
    expect(text).toContain('--since <date>');
    expect(text).toContain('PAYHOOKS_API_KEY');
  });

  it('an unknown --resource, a bad --since, a missing or malformed API key: exit 1 with a clear message, nothing opened', {
    timeout: 60_000,
  }, async () => {
    // Argument errors: through the CLI's run() in this process (its exit code is the process's), one at a time.
    const resource = await runInProcess(['backfill', '--resource', 'customers,payments'], env, dir);
    const since = await runInProcess(['backfill', '--since', '2025-02-30'], env, dir);
    const zoneless = await runInProcess(['backfill', '--since', '2025-02-01T10:00'], env, dir);
    const noKey = await runInProcess(['backfill'], { ...env, PAYHOOKS_API_KEY: '' }, dir);
    const badKey = await runInProcess(['backfill'], { ...env, PAYHOOKS_API_KEY: 'pk_test_public' }, dir);
    for (const result of [resource, since, zoneless, noKey, badKey]) {
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
    }
    expect(resource.stderr).toContain(
      'payhooks: --resource "payments" cannot be backfilled: the valid ones are customers, invoices (the only resources the service\'s API lists;',
    );
    expect(since.stderr).toContain('payhooks: --since takes a date such as 2025-01-31 (midnight UTC)');
    expect(since.stderr).toContain('"2025-02-30" is not a real date or time');
    expect(zoneless.stderr).toContain('"2025-02-01T10:00" has no zone (add Z or an offset)');
    expect(noKey.stderr).toContain("payhooks: PAYHOOKS_API_KEY is not set: backfill reads the service's API");
    expect(badKey.stderr).toContain('apiKey must be a secret key starting with sk_');
    expect(badKey.stderr).not.toContain('pk_test_public');
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe.skipIf(pgUrl === null)('payhooks backfill as a separate process on the real server', () => {
  const silent = pino({ level: 'silent' });
  let simulator: Simulator;
  let proxy: ListProxy;

  beforeAll(async () => {
    simulator = await startSimulator({ rateLimitPerMinute: 1_000_000, logger: silent });
    await seed(simulator, COUNT);
    proxy = await startListProxy(simulator.url);
  }, 60_000);

  afterAll(async () => {
    await proxy?.close();
    await simulator?.close();
  });

  /** A schema pair of its own, the environment that points the CLI at it, and a handle to look inside. */
  async function fixture() {
    const schema = uniqueSchema('bf');
    const mirrorSchema = `${schema}_mirror`;
    const env = {
      DATABASE_URL: pgUrl ?? undefined,
      PAYHOOKS_SCHEMA: schema,
      PAYHOOKS_MIRROR_SCHEMA: mirrorSchema,
      PAYHOOKS_API_KEY: 'sk_test_cli',
      PAYHOOKS_API_URL: proxy.url,
      PAYHOOKS_CONFIG: '',
    };
    const store = await openDatabase({ url: pgUrl ?? undefined, schema });
    const db = store.db.withoutPlugins();
    const cursor = async (resource: string) => {
      try {
        const { rows } = await sql<{ next_skip: number; written: number; finished: boolean }>`
          select next_skip, written, finished_at is not null as finished
          from ${sql.id(mirrorSchema, 'backfill_cursors')} where resource = ${resource} and since_key = ''`.execute(db);
        return rows[0];
      } catch {
        return undefined; // the child has not created the mirror yet
      }
    };
    const count = async (table: string) =>
      (await sql<{ n: number }>`select count(*)::int as n from ${sql.id(mirrorSchema, table)}`.execute(db)).rows[0]!.n;
    const drop = async () => {
      await sql.raw(`drop schema if exists "${mirrorSchema}" cascade; drop schema if exists "${schema}" cascade`).execute(db);
      await store.close();
    };
    return { env, mirrorSchema, store, cursor, count, drop };
  }

  async function expectMirrorEqualsSimulator(store: PayhooksDatabase, mirrorSchema: string) {
    const expected = expectedMirror(simulator.records());
    const actual = await actualMirror(store, mirrorSchema);
    expect(actual.customers).toHaveLength(COUNT);
    expect(actual.invoices).toHaveLength(COUNT);
    expect(actual.customers).toEqual(expected.customers);
    expect(actual.invoices).toEqual(expected.invoices);
  }

  it('killed half-way and run again, it finishes without duplicates, in fewer requests than two passes', { timeout: 60_000 }, async () => {
    const { env, mirrorSchema, store, cursor, count, drop } = await fixture();
    try {
      proxy.lists.length = 0;
      const child = spawnCli(['backfill'], env);
      const first = collect(child);
      await waitFor(async () => ((await cursor('customers'))?.next_skip ?? 0) >= 300, 'the customers cursor at 300', 30_000);
      child.kill('SIGKILL');
      expect((await first).code).toBe(null);
      const firstRequests = proxy.lists.length;

      // The cursor is exactly at the rows written: each page and its cursor move commit together.
      const stopped = await cursor('customers');
      expect(stopped).toMatchObject({ finished: false });
      const at = stopped!.next_skip;
      expect(at % 100).toBe(0);
      expect(at).toBeLessThan(COUNT);
      expect(await count('customers')).toBe(at);
      expect(stopped!.written).toBe(at);
      // The pages committed, and at most the one in flight when the kill came.
      expect(firstRequests - at / 100).toBeGreaterThanOrEqual(0);
      expect(firstRequests - at / 100).toBeLessThanOrEqual(1);

      proxy.lists.length = 0;
      const second = await runCli(['backfill'], env);
      expect(second.code, second.stderr).toBe(0);
      const secondRequests = proxy.lists.length;
      expect(proxy.lists[0]).toEqual({ path: '/v1/customers', skip: at });
      expect(secondRequests).toBe((COUNT - at) / 100 + COUNT / 100);
      const total = firstRequests + secondRequests;
      console.info(
        `[backfill cli] killed at record ${at}: ${firstRequests} + ${secondRequests} = ${total} list requests (a full pass: 20)`,
      );
      expect(total).toBeLessThanOrEqual(2 * (COUNT / 100) + 1);
      expect(total).toBeLessThan(2 * 2 * (COUNT / 100));

      expect(second.stderr).toContain(`customers: resuming at record ${at} (${at} written before the interruption)`);
      expect(second.stderr).toContain('invoices: reading from the start');
      expect(second.stdout).toContain(
        `backfill of 1,000 customers and 1,000 invoices into ${mirrorSchema} finished: ${secondRequests} requests in`,
      );
      expect(second.stdout).toMatch(
        new RegExp(
          `^customers: finished at record 1,000: ${(COUNT - at).toLocaleString('en-US')} read, ${(COUNT - at).toLocaleString('en-US')} written in ${(COUNT - at) / 100} requests, resumed at record ${at}; 1,000 written in this pass$`,
          'm',
        ),
      );
      expect(second.stdout).toMatch(/^invoices: finished at record 1,000: 1,000 read, 1,000 written in 10 requests$/m);

      // Without a terminal: plain progress lines, no bar (no escape sequences).
      const progress = second.stderr.split('\n').filter((line) => line.startsWith('read '));
      expect(progress[0]).toBe(`read ${at + 100}/1000 customers`);
      expect(progress).toContain('read 1000/1000 customers');
      expect(progress.filter((line) => line.endsWith(' invoices'))).toEqual(
        Array.from({ length: 10 }, (_, page) => `read ${(page + 1) * 100}/1000 invoices`),
      );
      expect(second.stderr).not.toContain('\u001b');

      await expectMirrorEqualsSimulator(store, mirrorSchema);
      expect(await cursor('customers')).toEqual({ next_skip: COUNT, written: COUNT, finished: true });
      expect(await cursor('invoices')).toEqual({ next_skip: COUNT, written: COUNT, finished: true });
    } finally {
      await drop();
    }
  });

  it('SIGINT stops after the page being written, says where, exits 1; the next run resumes there', { timeout: 60_000 }, async () => {
    const { env, cursor, count, drop } = await fixture();
    try {
      const child = spawnCli(['backfill', '--resource', 'customers'], env);
      const done = collect(child);
      await waitFor(async () => ((await cursor('customers'))?.next_skip ?? 0) >= 200, 'the customers cursor at 200', 30_000);
      child.kill('SIGINT');
      const stopped = await done;
      expect(stopped.code).toBe(1);
      expect(stopped.stderr).toContain('SIGINT: stopping after the page being written');
      const match =
        /stopped by SIGINT \(customers at record (\d+) of 1,000\) after \d+ requests in [\d.]+ s; run payhooks backfill again to resume there/.exec(
          stopped.stderr,
        );
      expect(match, stopped.stderr).not.toBeNull();
      const at = Number(match![1]);
      expect(stopped.stdout).toContain(`customers: stopped at record ${at} of 1,000`);
      expect((await cursor('customers'))?.next_skip).toBe(at);
      expect(await count('customers')).toBe(at);

      const again = await runCli(['backfill', '--resource', 'customers'], env);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stderr).toContain(`customers: resuming at record ${at}`);
      expect(again.stdout).toContain('backfill of 1,000 customers into');
      expect(await count('customers')).toBe(COUNT);
    } finally {
      await drop();
    }
  });
});
