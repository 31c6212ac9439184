import { dispose } from '../helpers/stores.js';
import { createServer, request } from 'node:http';
import { Readable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPayhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { envelope, post, signedDelivery } from '../helpers/deliveries.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'durability-secret';
const scheme = createDefaultScheme({ secrets: [SECRET] });
const logger = pino({ level: 'silent' });

describe.skipIf(!pgUrl)('durability on the real PostgreSQL server', () => {
  let store: PayhooksDatabase;
  beforeAll(async () => {
    store = await openDatabase({ url: pgUrl!, schema: uniqueSchema('durable'), poolSize: 10 });
    await migrate(store);
  });
  afterAll(async () => {
    await dispose(store);
  });

  it('500 concurrent deliveries of 100 events leave 100 rows whose delivery counts sum to 500', async () => {
    const hooks = createPayhooks({ secret: SECRET, database: store, logger });
    const { url, close } = await listen(createServer(hooks.node()));
    try {
      // Every event at least once, the other 400 deliveries random repeats, all in flight together.
      const ids = [...Array.from({ length: 100 }, (_, i) => i), ...Array.from({ length: 400 }, () => Math.floor(Math.random() * 100))].map(
        (i) => `conc_${i}`,
      );
      const responses = await Promise.all(ids.map((id) => post(`${url}/webhooks`, signedDelivery(scheme, envelope(id)))));
      expect(responses.every((r) => r.status === 200)).toBe(true);
      expect(responses.filter((r) => !(r.body as { duplicate?: boolean }).duplicate)).toHaveLength(100);
      const rows = await store.db
        .selectFrom('inbox_event_states')
        .select(['event_id', 'deliveries'])
        .where('event_id', 'like', 'conc_%')
        .execute();
      expect(rows).toHaveLength(100);
      expect(rows.reduce((sum, row) => sum + row.deliveries, 0)).toBe(500);
    } finally {
      await close();
    }
  });

  it('while the database is away every answer is 503, and nothing acknowledged is missing once it is back', async () => {
    const proxy = await startTcpProxy(Number(new URL(pgUrl!).port || 5432), new URL(pgUrl!).hostname);
    const viaProxy = new URL(pgUrl!);
    viaProxy.port = String(proxy.port);
    const hooks = createPayhooks({
      secret: SECRET,
      database: { url: viaProxy.toString(), schema: store.schema, connectionTimeoutMs: 500 },
      ackBudgetMs: 1500,
      logger,
    });
    const { url, close } = await listen(createServer(hooks.node()));
    const acked = new Set<string>();
    const refused: number[] = [];
    const send = async (id: string, phase: string) => {
      const response = await post(`${url}/webhooks`, signedDelivery(scheme, envelope(id)));
      if (response.status >= 200 && response.status < 300) acked.add(id);
      else refused.push(response.status);
      return { phase, status: response.status };
    };
    try {
      const ids = Array.from({ length: 60 }, (_, i) => `away_${i}`);
      const before = await Promise.all(ids.slice(0, 20).map((id) => send(id, 'before')));
      await proxy.cut();
      const during = await Promise.all(ids.slice(20, 40).map((id) => send(id, 'during')));
      await proxy.restore();
      const after = await Promise.all(ids.slice(40).map((id) => send(id, 'after')));

      expect(before.every((r) => r.status === 200)).toBe(true);
      expect(during.map((r) => r.status)).toEqual(Array(20).fill(503));
      expect(after.every((r) => r.status === 200)).toBe(true);

      // The sender retries what was refused; now it is stored.
      const retried = await Promise.all(ids.slice(20, 40).map((id) => send(id, 'retry')));
      expect(retried.every((r) => r.status === 200)).toBe(true);

      const stored = await store.db.selectFrom('inbox_events').select('event_id').where('event_id', 'like', 'away_%').execute();
      const storedIds = new Set(stored.map((row) => row.event_id));
      for (const id of acked) expect(storedIds.has(id)).toBe(true);
      expect(storedIds.size).toBe(60);
    } finally {
      await close();
      await hooks.close();
      await proxy.close();
    }
  });

  it('a database that hangs past the ack budget gets 503, and the retry after it answers is stored once', async () => {
    const proxy = await startTcpProxy(Number(new URL(pgUrl!).port || 5432), new URL(pgUrl!).hostname);
    const viaProxy = new URL(pgUrl!);
    viaProxy.port = String(proxy.port);
    const hooks = createPayhooks({
      secret: SECRET,
      database: { url: viaProxy.toString(), schema: store.schema },
      ackBudgetMs: 500,
      logger,
    });
    const { url, close } = await listen(createServer(hooks.node()));
    try {
      expect((await post(`${url}/webhooks`, signedDelivery(scheme, envelope('hang_warmup')))).status).toBe(200);
      // The two deliveries differ only in their timestamp header, which is stored with the row: it tells which of
      // them inserted it.
      const firstTimestamp = Math.floor(Date.now() / 1000) - 1;
      const retryTimestamp = firstTimestamp + 1;
      proxy.stall();
      const started = Date.now();
      const during = await post(`${url}/webhooks`, signedDelivery(scheme, envelope('hang_1'), { timestamp: firstTimestamp }));
      const waited = Date.now() - started;
      expect(during.status).toBe(503);
      expect(waited).toBeGreaterThanOrEqual(450);
      expect(waited).toBeLessThan(5000);
      proxy.resume();
      // The sender retries; the late insert may land before or after it.
      const retried = await post(`${url}/webhooks`, signedDelivery(scheme, envelope('hang_1'), { timestamp: retryTimestamp }));
      expect(retried.status).toBe(200);
      // Both deliveries reached the database (the first one's bytes were only held back), so once the late insert
      // has finished the row counts exactly two, read on a connection that bypasses the proxy.
      const row = () =>
        store.db.selectFrom('inbox_event_states').select(['deliveries', 'headers']).where('event_id', '=', 'hang_1').executeTakeFirst();
      await waitFor(async () => ((await row())?.deliveries ?? 0) >= 2, 'both deliveries of hang_1 to reach the database');
      const stored = (await row())!;
      expect(stored.deliveries).toBe(2);
      // The retry says duplicate exactly when the first (late) insert was the one that created the row.
      const inserter = stored.headers['x-webhook-timestamp'];
      expect([String(firstTimestamp), String(retryTimestamp)]).toContain(inserter);
      const firstLanded = inserter === String(firstTimestamp);
      expect(retried.body).toEqual(firstLanded ? { received: true, duplicate: true } : { received: true });
    } finally {
      await close();
      await hooks.close();
      await proxy.close();
    }
  });
});

describe('a 50 MiB body', () => {
  it('is answered 413 while memory grows far less than 50 MiB', async () => {
    const store = await openDatabase({ dataDir: 'memory://', schema: 'big_body' });
    await migrate(store);
    const hooks = createPayhooks({ secret: SECRET, database: store, logger });
    // What the server answered, seen from the server: the client may never read it (below).
    const answers: { status: number; sent: boolean }[] = [];
    const handler = hooks.node();
    const { url, close } = await listen(
      createServer((req, res) => {
        res.on('close', () => answers.push({ status: res.statusCode, sent: res.headersSent }));
        handler(req, res);
      }),
    );
    try {
      for (const declareLength of [true, false]) {
        answers.length = 0;
        global.gc?.();
        const before = process.memoryUsage();
        const total = 50 * 1024 * 1024;
        const chunk = Buffer.alloc(64 * 1024, 0x61);
        let sent = 0;
        const body = new Readable({
          read() {
            if (sent >= total) return this.push(null);
            sent += chunk.length;
            this.push(chunk);
          },
        });
        // The server answers 413 and closes while the client is still sending. Under load the kernel may reset
        // the connection (EPIPE, ECONNRESET) before the client reads that answer: acceptable, as long as the
        // server did answer 413, which `answers` checks. Any other client error, or a 5xx, fails.
        const status = await new Promise<number | 'reset'>((resolve, reject) => {
          const req = request(`${url}/webhooks`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...(declareLength ? { 'content-length': String(total) } : {}) },
          });
          req.on('response', (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
            body.destroy();
            req.destroy();
          });
          req.on('error', (err: NodeJS.ErrnoException) => {
            body.destroy();
            if (err.code === 'EPIPE' || err.code === 'ECONNRESET') resolve('reset');
            else reject(err);
          });
          body.pipe(req);
        });
        await waitFor(() => answers.length > 0, 'the server to finish its answer');
        expect(answers).toEqual([{ status: 413, sent: true }]);
        if (status !== 'reset') expect(status).toBe(413);
        const after = process.memoryUsage();
        const growth = after.rss - before.rss;
        // The client side streams lazily, so the growth measured is the server's buffering plus noise.
        expect(growth).toBeLessThan(16 * 1024 * 1024);
        // The server stopped the upload early instead of draining it all.
        expect(sent).toBeLessThan(total);
      }
    } finally {
      await close();
      await hooks.close();
      await store.close();
    }
  });
});
