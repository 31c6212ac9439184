// Effects under SIGKILL (issue 25): events whose handler performs two effect steps each, a worker killed at random
// points by the stub API itself (when a call arrives, before or after applying it: between the call and its record),
// restarted each time. Afterwards every event is done or needs-review, the stub applied no key twice, no step that
// is not idempotent was called twice, and the counts add up. EFFECT_CHAOS_EVENTS (default 10,000) and
// EFFECT_CHAOS_KILLS (default 60) size it.
import { fork, type ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { countNeedsReview } from '../../src/store/effect-steps.js';
import { migrate } from '../../src/store/migrate.js';
import { effectKey } from '../../src/worker/effects.js';
import { libraryEntry } from '../helpers/cli.js';
import { putEvents } from '../helpers/inbox.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';

const fixture = fileURLToPath(new URL('../fixtures/effect-chaos-worker.mjs', import.meta.url));
const EVENTS = Number(process.env.EFFECT_CHAOS_EVENTS ?? 10_000);
const KILLS = Number(process.env.EFFECT_CHAOS_KILLS ?? 60);
/** The whole scenario's bound: it ends (and fails) rather than running on. */
const BUDGET_MS = Number(process.env.EFFECT_CHAOS_BUDGET_MS ?? 15 * 60_000);

/** The stub API: counts calls per idempotency key, applies each key once, and kills the worker on some calls. */
class Stub {
  readonly calls = new Map<string, number>();
  readonly applied = new Map<string, number>();
  /** Keys whose call killed the worker: before applying it, or after. */
  readonly killedOn: { key: string; step: string; applied: boolean }[] = [];
  workerPid: number | undefined;
  server: Server;
  url = '';
  #random = 0x2545f491;

  constructor(readonly killProbability: number) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('error', () => res.destroy());
      req.on('end', () => {
        const key = String(req.headers['idempotency-key'] ?? '');
        const { step } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { step: string };
        this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
        const kill = this.workerPid !== undefined && this.killedOn.length < KILLS && this.next() < this.killProbability;
        const apply = !kill || this.next() < 0.5;
        // A repeat of a key is answered, not applied again (the service's X-Idempotency-Key): applied stays 1.
        const first = !this.applied.has(key);
        if (apply && first) this.applied.set(key, 1);
        if (kill) {
          this.killedOn.push({ key, step, applied: apply });
          process.kill(this.workerPid!, 'SIGKILL');
          this.workerPid = undefined;
          res.destroy();
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ applied: apply && first }));
      });
    });
  }

  /** A small deterministic generator (xorshift32), so a failing run can be repeated. */
  next(): number {
    let x = this.#random;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.#random = x >>> 0;
    return this.#random / 2 ** 32;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }
}

/**
 * Starts a worker process that loads and then waits (a spare): {@link goWorker} sets it working. Killed workers are
 * replaced by the spare at once, and a new spare loads meanwhile, so the scenario does not wait for process starts.
 */
function spareWorker(env: Record<string, string>): Promise<ChildProcess> {
  const { execArgv, entry } = libraryEntry();
  const child = fork(fixture, [], {
    execArgv,
    env: { ...process.env, PAYHOOKS_TEST_ENTRY: entry, DATABASE_URL: pgUrl!, ...env, SPARE: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return untilMessage(child, 'loaded');
}

/** Sets a spare working; resolves once its worker has started. */
function goWorker(child: ChildProcess): Promise<ChildProcess> {
  const started = untilMessage(child, 'started');
  child.send('go');
  return started;
}

function untilMessage(child: ChildProcess, expected: string): Promise<ChildProcess> {
  return new Promise((resolve, reject) => {
    const onMessage = (message: unknown) => {
      if (message !== expected) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(child);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => reject(new Error(`worker exited early (${code ?? signal})`));
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

const exited = (child: ChildProcess) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise<void>((resolve) => child.once('exit', () => resolve()));

describe('effect steps under SIGKILL', () => {
  let store: PayhooksDatabase | undefined;
  let stub: Stub | undefined;
  let worker: ChildProcess | undefined;
  let spare: Promise<ChildProcess> | undefined;
  afterAll(async () => {
    for (const child of [worker, await spare?.catch(() => undefined)]) {
      if (!child || child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGKILL');
      await exited(child);
    }
    await new Promise((resolve) => stub?.server.close(resolve));
    if (store) await dispose(store);
  });

  it.skipIf(!pgUrl)(
    `${EVENTS} events, two effects each, the worker SIGKILLed ${KILLS} times between a call and its record: every event done or needs-review, nothing applied twice`,
    { timeout: BUDGET_MS + 60_000 },
    async () => {
      store = await openDatabase({ url: pgUrl!, schema: uniqueSchema('chaos') });
      await migrate(store);
      const s = store;
      // Enough kills early on: about KILLS in the first half of the run's calls.
      stub = new Stub(Math.min(0.5, (KILLS * 4) / (EVENTS * 2)));
      await stub.listen();
      const ids = Array.from({ length: EVENTS }, (_, i) => `evt_chaos_${String(i).padStart(6, '0')}`);
      // Each of its own invoice, as a run of many customers' invoices is: with one invoice for all, per-resource order
      // would run them one at a time, and the scenario would measure that instead of the effects.
      for (let i = 0; i < ids.length; i += 1000)
        await putEvents(
          s,
          ids
            .slice(i, i + 1000)
            .map((eventId) => exampleEvent('INVOICE_PAID', { eventId, data: { invoiceId: `inv_${eventId.slice(4)}` } })),
        );

      const deadline = Date.now() + BUDGET_MS;
      const env = {
        PAYHOOKS_SCHEMA: s.schema,
        STUB_URL: stub.url,
        LEASE_MS: '2000',
        CONCURRENCY: process.env.EFFECT_CHAOS_CONCURRENCY ?? '32',
        POOL_SIZE: '16',
      };
      const settled = async () => {
        const { rows } = await sql<{ n: number }>`
          select count(*)::int as n from ${sql.id(s.schema, 'inbox_events')} where status in ('done', 'needs-review')`.execute(s.db);
        return rows[0]!.n;
      };
      let starts = 0;
      spare = spareWorker(env);
      while ((await settled()) < EVENTS) {
        if (Date.now() > deadline) throw new Error(`not settled within ${BUDGET_MS} ms: ${await settled()} of ${EVENTS}`);
        if (!worker || worker.exitCode !== null || worker.signalCode !== null) {
          const next = await spare;
          spare = spareWorker(env);
          worker = await goWorker(next);
          starts++;
          stub.workerPid = worker.pid;
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      worker!.kill('SIGTERM');
      await exited(worker!);

      const { rows: states } = await sql<{ status: string; n: number }>`
        select status, count(*)::int as n from ${sql.id(s.schema, 'inbox_events')} group by status`.execute(s.db);
      const byStatus = Object.fromEntries(states.map((r) => [r.status, r.n]));
      const { rows: steps } = await sql<{ event_id: string; step: string; state: string; calls: number }>`
        select event_id, step, state, calls from ${sql.id(s.schema, 'effect_steps')}`.execute(s.db);
      const review = new Set(steps.filter((x) => x.state === 'needs-review').map((x) => x.event_id));

      // Every event ended done or needs-review.
      expect((byStatus.done ?? 0) + (byStatus['needs-review'] ?? 0)).toBe(EVENTS);
      // The stub applied no key twice; no key of a step that is not idempotent was even called twice.
      expect([...stub.applied.values()].every((n) => n === 1)).toBe(true);
      const notifyCalls = ids.map((id) => stub!.calls.get(effectKey('default', id, 'billing', 'notify')) ?? 0);
      expect(notifyCalls.every((n) => n <= 1)).toBe(true);
      // The events held are exactly those whose notify step is held, and none of them was called after it was held.
      const { rows: held } = await sql<{ event_id: string }>`
        select event_id from ${sql.id(s.schema, 'inbox_events')} where status = 'needs-review'`.execute(s.db);
      expect(new Set(held.map((r) => r.event_id))).toEqual(review);
      for (const x of steps.filter((x) => x.state === 'needs-review')) expect(x.step).toBe('notify');
      // Every notify call that killed the worker left its event held for review.
      const killedNotify = stub.killedOn.filter((k) => k.step === 'notify');
      for (const k of killedNotify)
        expect(review.has(ids.find((id) => effectKey('default', id, 'billing', 'notify') === k.key)!)).toBe(true);
      // Every done event: both of its effects applied at the stub, exactly once.
      const done = ids.filter((id) => !review.has(id));
      for (const id of done) {
        expect(stub.applied.get(effectKey('default', id, 'billing', 'charge'))).toBe(1);
        expect(stub.applied.get(effectKey('default', id, 'billing', 'notify'))).toBe(1);
      }
      expect(stub.killedOn.length).toBeGreaterThanOrEqual(Math.min(KILLS, 50));
      expect(await countNeedsReview(s)).toEqual({ steps: review.size, events: review.size });
      const chargeRepeats = ids.reduce(
        (sum, id) => sum + Math.max(0, (stub!.calls.get(effectKey('default', id, 'billing', 'charge')) ?? 0) - 1),
        0,
      );
      console.log(
        `[effect chaos] ${EVENTS} events: ${done.length} done + ${review.size} needs-review = ${done.length + review.size}; ` +
          `${stub.killedOn.length} kills (${killedNotify.length} on notify, ${stub.killedOn.length - killedNotify.length} on charge; ` +
          `${stub.killedOn.filter((k) => k.applied).length} after applying), ${starts} worker starts; charge calls repeated with the same key ${chargeRepeats} times, applied once each; ` +
          `notify called at most once per key`,
      );
    },
  );
});
