import { Agent, createServer, request } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPayhooks } from '../../src/payhooks.js';
import { DEFAULT_ACK_BUDGET_MS } from '../../src/receiver/receiver.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { envelope, post, signedDelivery } from '../helpers/deliveries.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { dispose } from '../helpers/stores.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const SECRET = 'ack-budget-secret';
const scheme = createDefaultScheme({ secrets: [SECRET] });
const logger = pino({ level: 'silent' });

/**
 * The requirement on every answer as the sender sees it: well before its 10 s. It is the default ack budget (5 s)
 * plus 1.5 s for writing the answer back and reading it on a busy machine whose event loop also runs the sender.
 */
const ANSWER_BOUND_MS = 6500;

/** One delivery as the sender saw it: when it was sent (ms into the run), how long the answer took, and which. */
interface Answer {
  id: string;
  sentAt: number;
  ms: number;
  status: number;
}

/** Keeps connections open between deliveries, as a sender does; as many at once as deliveries are in flight. */
const agent = new Agent({ keepAlive: true });

/** Posts one delivery of `id`; a connection error counts as status 0, which no assertion below accepts. */
function send(url: string, id: string, sentAt: number): Promise<Answer> {
  const started = performance.now();
  const { body, headers } = signedDelivery(scheme, envelope(id));
  return new Promise((resolve) => {
    const answered = (status: number) => resolve({ id, sentAt, ms: performance.now() - started, status });
    const req = request(url, { method: 'POST', headers, agent }, (res) => {
      res.resume();
      res.on('end', () => answered(res.statusCode ?? 0));
      res.on('error', () => answered(0));
    });
    req.on('error', () => answered(0));
    req.end(body);
  });
}

/** A proxy in front of the real server, and the URL that goes through it. */
async function proxied(): Promise<{ proxy: TcpProxy; url: string }> {
  const target = new URL(pgUrl!);
  const proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
  const viaProxy = new URL(pgUrl!);
  viaProxy.port = String(proxy.port);
  return { proxy, url: viaProxy.toString() };
}

describe.skipIf(!pgUrl)('the ack budget on the real PostgreSQL server', () => {
  let direct: PayhooksDatabase;
  beforeAll(async () => {
    direct = await openDatabase({ url: pgUrl!, schema: uniqueSchema('ack_budget') });
    await migrate(direct);
  });
  afterAll(async () => {
    agent.destroy();
    await dispose(direct);
  });

  const storedIds = async (prefix: string) =>
    new Set(
      (await direct.db.selectFrom('inbox_events').select('event_id').where('event_id', 'like', `${prefix}%`).execute()).map(
        (row) => row.event_id,
      ),
    );

  it('200 deliveries/s through a 15 s blackhole of the database: every answer within the budget, nothing acknowledged lost', {
    timeout: 90_000,
  }, async () => {
    const RATE = 200;
    const RUN_MS = 25_000;
    const BLACKHOLE_AT_MS = 5_000;
    const HEAL_AT_MS = 20_000;
    const { proxy, url: databaseUrl } = await proxied();
    const inside: number[] = [];
    // Everything at its default, as `payhooks serve` runs it: the pool, its timeouts, the budget, group commit.
    const hooks = createPayhooks({
      secret: SECRET,
      database: { url: databaseUrl, schema: direct.schema },
      logger,
      observe: { delivery: ({ seconds }) => void inside.push(seconds * 1000) },
    });
    const server = createServer(hooks.node());
    // Longer than the run: a server closing an idle connection just as the sender reuses it would fail that request.
    server.keepAliveTimeout = 60_000;
    const { url, close } = await listen(server);
    const loopDelay = monitorEventLoopDelay({ resolution: 10 });
    const answers: Answer[] = [];
    try {
      // Warm up first, as a running service is: the pool's connections open, the sender's connections too.
      const warmup = await Promise.all(Array.from({ length: 200 }, (_, i) => send(`${url}/webhooks`, `warm_${i}`, 0)));
      expect(warmup.filter((answer) => answer.status !== 200)).toEqual([]);
      inside.length = 0;
      loopDelay.enable();
      const start = performance.now();
      const inFlight: Promise<void>[] = [];
      let sent = 0;
      // Paced by the clock, not by answers: the sender does not wait for one delivery before sending the next.
      for (let now = 0; now < RUN_MS; now = performance.now() - start) {
        if (now >= BLACKHOLE_AT_MS && now < HEAL_AT_MS) proxy.blackhole();
        if (now >= HEAL_AT_MS) proxy.heal();
        for (const due = Math.floor((now / 1000) * RATE); sent < due; sent++) {
          inFlight.push(send(`${url}/webhooks`, `ack_${sent}`, now).then((answer) => void answers.push(answer)));
        }
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await Promise.all(inFlight);
      loopDelay.disable();

      const latencies = answers.map((answer) => answer.ms).sort((a, b) => a - b);
      const count = (status: number) => answers.filter((answer) => answer.status === status).length;
      console.info(
        `[ack-budget] ${answers.length} deliveries: ${count(200)} × 200, ${count(503)} × 503; answered in p99 ${Math.round(latencies[Math.floor(latencies.length * 0.99)]!)} ms, max ${Math.round(latencies.at(-1)!)} ms (${Math.round(Math.max(...inside))} ms inside the receiver; the event loop was held up to ${Math.round(loopDelay.max / 1e6)} ms)`,
      );
      for (let second = 0; second < RUN_MS / 1000; second++) {
        const these = answers.filter((answer) => Math.floor(answer.sentAt / 1000) === second);
        const slowest = Math.round(Math.max(...these.map((answer) => answer.ms)));
        console.info(
          `[ack-budget] sent in second ${second}: ${these.length}, ${these.filter((a) => a.status === 200).length} × 200, slowest ${slowest} ms`,
        );
      }

      // Every answer is a 200 or a 503 (which the sender retries), and came well before the sender's 10 s.
      expect(answers).toHaveLength(sent);
      expect(answers.filter((answer) => answer.status !== 200 && answer.status !== 503)).toEqual([]);
      expect(answers.filter((answer) => answer.ms >= ANSWER_BOUND_MS)).toEqual([]);
      // The part payhooks controls, from the call of the receiver to its answer: the budget, plus timers running late.
      expect(inside).toHaveLength(sent);
      expect(inside.filter((ms) => ms >= DEFAULT_ACK_BUDGET_MS + 1000)).toEqual([]);

      // Never a 200 for what is not stored.
      const afterRun = await storedIds('ack_');
      expect(answers.filter((answer) => answer.status === 200 && !afterRun.has(answer.id))).toEqual([]);

      // Service is back within a few seconds of the network: from 2 s after the heal, every delivery was stored.
      const afterHeal = answers.filter((answer) => answer.sentAt >= HEAL_AT_MS + 2000);
      expect(afterHeal.length).toBeGreaterThan(0);
      expect(afterHeal.filter((answer) => answer.status !== 200)).toEqual([]);

      // The sender retries what was refused, and each ends stored once.
      const refused = answers.filter((answer) => answer.status !== 200);
      expect(refused.length).toBeGreaterThan(0);
      const retried: Answer[] = [];
      for (let i = 0; i < refused.length; i += 200) {
        retried.push(...(await Promise.all(refused.slice(i, i + 200).map((answer) => send(`${url}/webhooks`, answer.id, RUN_MS)))));
      }
      expect(retried.filter((answer) => answer.status !== 200)).toEqual([]);
      const rows = await direct.db.selectFrom('inbox_events').select('event_id').where('event_id', 'like', 'ack_%').execute();
      expect(rows).toHaveLength(sent);
      expect((await storedIds('ack_')).size).toBe(sent);
    } finally {
      loopDelay.disable();
      proxy.heal();
      await close();
      await hooks.close();
      await proxy.close();
    }
  });

  it('a delivery that waited for a connection past the budget is not written when one frees', { timeout: 30_000 }, async () => {
    const hooks = createPayhooks({
      secret: SECRET,
      database: { url: pgUrl!, schema: direct.schema, poolSize: 1 },
      ackBudgetMs: 500,
      logger,
    });
    const { url, close } = await listen(createServer(hooks.node()));
    try {
      const store = await hooks.ready();
      // The pool's one connection is busy for longer than the budget.
      const busy = sql`select pg_sleep(1.5)`.execute(store.db);
      const waited = await send(`${url}/webhooks`, 'queued_1', 0);
      expect(waited.status).toBe(503);
      expect(waited.ms).toBeLessThan(500 + 1500);
      await busy;
      // Queued behind the delivery's wait for the connection, so it runs once the pool has dealt with that wait.
      await sql`select 1`.execute(store.db);
      expect(await storedIds('queued_')).toEqual(new Set());
      expect((await send(`${url}/webhooks`, 'queued_1', 0)).status).toBe(200);
      expect(await storedIds('queued_')).toEqual(new Set(['queued_1']));
    } finally {
      await close();
      await hooks.close();
    }
  });

  it('a statement stuck on a silent connection gives its place in the pool back at the budget', { timeout: 30_000 }, async () => {
    const { proxy, url: databaseUrl } = await proxied();
    // One connection in the pool: the stuck statement holds it, and the delivery after the heal needs it.
    const hooks = createPayhooks({
      secret: SECRET,
      database: { url: databaseUrl, schema: direct.schema, poolSize: 1 },
      ackBudgetMs: 1000,
      logger,
    });
    const { url, close } = await listen(createServer(hooks.node()));
    try {
      expect((await send(`${url}/webhooks`, 'stuck_warmup', 0)).status).toBe(200);
      proxy.blackhole();
      const during = await send(`${url}/webhooks`, 'stuck_during', 0);
      expect(during.status).toBe(503);
      expect(during.ms).toBeLessThan(1000 + 1500);
      proxy.heal();
      // The statement sent during the partition is still unanswered on its connection, and stays so forever.
      const after = await send(`${url}/webhooks`, 'stuck_after', 0);
      expect(after).toMatchObject({ status: 200 });
      expect(after.ms).toBeLessThan(1000 + 1500);
      // The sender's retry of the refused delivery is stored, once: the statement sent during the partition never
      // reached the server.
      const retried = await post(`${url}/webhooks`, signedDelivery(scheme, envelope('stuck_during')));
      expect(retried).toEqual({ status: 200, body: { received: true } });
      expect(await storedIds('stuck_')).toEqual(new Set(['stuck_warmup', 'stuck_during', 'stuck_after']));
    } finally {
      proxy.heal();
      await close();
      await hooks.close();
      await proxy.close();
    }
  });
});
