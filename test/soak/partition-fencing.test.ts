// A partition between hosts (issue 49): a receiver, worker A and worker B, each a host of its own (a network namespace
// joined by a veth pair, reaching the shared PostgreSQL server through a forwarder on its link), all real
// `payhooks serve --role …` processes started inside their namespaces with `ip netns exec`. A claims the stored events
// and runs their slow handler; its link is taken down while the handler runs (its effect step's first write is then
// on the wire) and stays down past its lease, while B, started then, claims the events once their leases ran out and
// finishes them. When A's link comes back, what A wrote late (its effect steps, its outcome, its heartbeats) is fenced:
// dropped and logged `fenced: …`, never applied over B's. Each event's effect happened once, none was lost.
import { type ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { cliNodeArgs, logLines, runCli, waitForLog } from '../helpers/cli.js';
import { post, signedDelivery } from '../helpers/deliveries.js';
import { forwardTo, makeNamespacedHost, type NamespacedHost, netnsUnavailable } from '../helpers/netns.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { waitFor } from '../helpers/wait.js';

const noNetns = pgUrl ? netnsUnavailable() : 'no PostgreSQL server';
if (noNetns && pgUrl && process.env.CI === 'true') throw new Error(`CI needs network namespaces for the partition test: ${noNetns}`);
if (noNetns) console.warn(`[payhooks tests] the partition-fencing test is SKIPPED: ${noNetns}`);

const SECRET = 'partition-fencing-secret';
const EVENTS = 4;
// The lease must outlast the handler's timeout (the worker refuses it otherwise); heartbeats go every quarter lease,
// and a run stops by itself a quarter lease before its lease runs out. The handler waits for the cut (up to its
// timeout), so A's effect step is sent while A still believes it holds the lease, and lands only after the link heals.
const WORKER = { leaseMs: 4000, handlerTimeoutMs: 3500, pollIntervalMs: 200, concurrency: EVENTS, maxPrefetch: 0, maxAttempts: 10 };
const root = fileURLToPath(new URL('../..', import.meta.url));

/** The handler module: marks each start in a file, waits for the cut, then one effect step and one counted effect. */
function handlerModule(): string {
  return `// Written by test/soak/partition-fencing.test.ts.
import { appendFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';

const pg = createRequire(${JSON.stringify(join(root, 'package.json'))})('pg');
const schema = process.env.PAYHOOKS_SCHEMA;
const who = process.env.PARTITION_WORKER;
// The effect step's call records itself through a connection of its own (over the same link).
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: 2 });
pool.on('error', () => undefined);

export default function register(hooks) {
  hooks.on(
    'INVOICE_PAID',
    async (event, ctx) => {
      appendFileSync(process.env.PARTITION_MARKS, who + ' ' + event.eventId + '\\n');
      while (!existsSync(process.env.PARTITION_CUT)) await sleep(20);
      await ctx.effect('record-call', async () => {
        await pool.query('insert into "' + schema + '".effect_calls (event_id, worker) values ($1, $2)', [event.eventId, who]);
      });
      await ctx.transaction(async (trx) => {
        await trx.withSchema(schema).insertInto('effect_count').values({ event_id: event.eventId, worker: who }).execute();
      });
    },
    { name: 'count-effect' },
  );
}
`;
}

/** Which worker started which event, in order, from the marks file. */
function marks(path: string): { worker: string; eventId: string }[] {
  try {
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [worker, eventId] = line.split(' ');
        return { worker: worker!, eventId: eventId! };
      });
  } catch {
    return [];
  }
}

describe.skipIf(noNetns !== undefined)('a worker cut off from the database longer than its lease, on namespaced hosts', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    // Processes first (a namespace lives on while a process is in it), then forwarders, namespaces, the schema.
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  }, 60_000);

  it('B takes the events over; when A heals, its late writes are fenced; each effect once, none lost', { timeout: 170_000 }, async () => {
    const schema = uniqueSchema('partition_fencing');
    const admin = new pg.Client({ connectionString: pgUrl! });
    await admin.connect();
    cleanups.push(async () => {
      await admin.query(`drop schema if exists "${schema}" cascade`);
      await admin.end();
    });
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-partition-fencing-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const handlers = join(dir, 'handlers.mjs');
    writeFileSync(handlers, handlerModule());
    const config = join(dir, 'payhooks.config.json');
    writeFileSync(config, JSON.stringify({ worker: WORKER }));
    const marksFile = join(dir, 'marks.txt');
    const cutFile = join(dir, 'cut');
    const env = { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema, PAYHOOKS_WEBHOOK_SECRET: SECRET, PAYHOOKS_CONFIG: config };
    expect((await runCli(['migrate'], env)).code).toBe(0);
    for (const table of ['effect_count', 'effect_calls']) {
      await admin.query(`create table "${schema}".${table} (event_id text not null, worker text not null)`);
    }

    const hosts: NamespacedHost[] = [];
    /** Starts `serve --role <role>` on a host of its own, its database link through a forwarder on that link. */
    async function serveOnHost(
      index: number,
      role: 'receiver' | 'worker',
      name: string,
    ): Promise<{ child: ChildProcess; host: NamespacedHost; base: string }> {
      const host = makeNamespacedHost(index);
      hosts.push(host);
      cleanups.push(() => host.remove());
      const forwarder = await forwardTo(host.gateway, new URL(pgUrl!));
      cleanups.push(() => new Promise<void>((resolve) => forwarder.close(() => resolve())));
      const url = new URL(pgUrl!);
      url.hostname = host.gateway;
      url.port = String((forwarder.address() as { port: number }).port);
      const args = ['serve', '--role', role, ...(role === 'worker' ? ['--handlers', handlers] : [])];
      const [command, commandArgs] = host.exec(process.execPath, [...cliNodeArgs(args), ...args]);
      const child = spawn(command, commandArgs, {
        cwd: dir,
        env: {
          ...process.env,
          ...env,
          PAYHOOKS_LOG_LEVEL: 'info',
          DATABASE_URL: url.toString(),
          HOST: host.address,
          PORT: '8787',
          PARTITION_WORKER: name,
          PARTITION_MARKS: marksFile,
          PARTITION_CUT: cutFile,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.on('error', () => undefined);
      cleanups.push(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      });
      return { child, host, base: `http://${host.address}:8787` };
    }

    // The deliveries are stored through the receiver before any worker runs: A's first claim takes them all.
    const receiver = await serveOnHost(0, 'receiver', 'receiver');
    await waitForLog(receiver.child, /receiving webhooks/, 60_000);
    const scheme = createDefaultScheme({ secrets: SECRET });
    const ids = Array.from({ length: EVENTS }, (_, i) => `evt_partition_${i}`);
    for (const id of ids) {
      const { status } = await post(
        `${receiver.base}/webhooks`,
        signedDelivery(scheme, withOwnResource(exampleEvent('INVOICE_PAID', { eventId: id }), id)),
      );
      expect(status).toBe(200);
    }

    const a = await serveOnHost(1, 'worker', 'A');
    const aLines = logLines(a.child);
    let aStderr = '';
    a.child.stderr?.on('data', (chunk: Buffer) => (aStderr += chunk.toString()));
    await waitFor(
      () => marks(marksFile).filter((m) => m.worker === 'A').length === EVENTS,
      `A to start the ${EVENTS} events (stderr: ${aStderr})`,
      60_000,
    );

    // The partition: A's link goes down while its handlers wait; they go on to their effect steps, whose writes stall.
    a.host.setLink(false);
    const cutAt = Date.now();
    let healed = false;
    cleanups.push(() => {
      if (!healed) a.host.setLink(true);
    });
    appendFileSync(cutFile, String(cutAt));
    const b = await serveOnHost(2, 'worker', 'B');
    const bLines = logLines(b.child);
    const done = async () =>
      Number(
        (
          await admin.query<{ n: string }>(
            `select count(*) as n from "${schema}".inbox_events where event_id = any($1) and status = 'done'`,
            [ids],
          )
        ).rows[0]?.n,
      );
    await waitFor(async () => (await done()) === EVENTS, 'B to finish every event while A is cut off', 90_000);
    // Longer than the lease, whatever B's start took.
    while (Date.now() - cutAt <= WORKER.leaseMs + 1000) await new Promise((resolve) => setTimeout(resolve, 100));
    a.host.setLink(true);
    healed = true;
    const cutMs = Date.now() - cutAt;

    const fenced = () => aLines.filter((line) => typeof line.msg === 'string' && line.msg.startsWith('fenced:'));
    // A's stalled writes arrive once TCP retransmits them (within seconds of the heal), and are dropped.
    await waitFor(() => fenced().length > 0, "A's late writes to be fenced", 30_000);
    // What else A had in flight lands (or fails) too; give it a moment, then check nothing of A's was applied.
    await new Promise((resolve) => setTimeout(resolve, 3000));

    const started = marks(marksFile);
    const rows = async (table: string) =>
      (await admin.query<{ event_id: string; worker: string }>(`select event_id, worker from "${schema}".${table} order by event_id`)).rows;
    const once = ids.map((id) => ({ event_id: id, worker: 'B' }));
    const kinds = fenced().map((line) => String(line.msg).replace(/^fenced: (the \S+( of handler \S+)?).*$/, '$1'));
    console.info(
      `[partition-fencing] ${EVENTS} events; A's link down ${cutMs} ms (lease ${WORKER.leaseMs} ms); ` +
        `${fenced().length} fenced writes of A: ${[...new Set(kinds)].join(', ')}; ` +
        `B's fenced: ${bLines.filter((line) => String(line.msg).startsWith('fenced:')).length}; starts: ${started.map((m) => m.worker).join('')}`,
    );
    expect(cutMs).toBeGreaterThan(WORKER.leaseMs);
    // A started every event first; B started each after, once.
    expect(started.slice(0, EVENTS).every((m) => m.worker === 'A')).toBe(true);
    expect(
      started
        .filter((m) => m.worker === 'B')
        .map((m) => m.eventId)
        .sort(),
    ).toEqual(ids);
    expect(fenced().length).toBeGreaterThan(0);
    expect(bLines.filter((line) => String(line.msg).startsWith('fenced:'))).toEqual([]);
    expect(await done()).toBe(EVENTS);
    // Each effect once, B's; the effect step called once an event, by B.
    expect(await rows('effect_count')).toEqual(once);
    expect(await rows('effect_calls')).toEqual(once);
    const steps = await admin.query<{ event_id: string; state: string }>(
      `select event_id, state from "${schema}".effect_steps where event_id = any($1) order by event_id`,
      [ids],
    );
    expect(steps.rows).toEqual(ids.map((id) => ({ event_id: id, state: 'completed' })));
  });
});
