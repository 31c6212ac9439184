import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient as createRedisClient } from '@redis/client';
import { describe, expect, inject, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { ForwardDocument } from '../../src/sync/forward-document.js';
import { collect, spawnCli, waitForLog } from '../helpers/cli.js';
import { post, signedDelivery } from '../helpers/deliveries.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';

const { redis: redisUp } = inject('brokers');

describe('payhooks serve with sinks in payhooks.config.json', () => {
  it('forwards each event, signed with the target secret read from the environment, which never reaches the logs', {
    timeout: 90_000,
  }, async () => {
    const targetSecret = 'whsec_erp_target_secret_value';
    const verify = createDefaultScheme({ secrets: targetSecret });
    const received: ForwardDocument[] = [];
    const target = await listen(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const rawBody = Buffer.concat(chunks);
          try {
            verify.verify({ headers: req.headers as Record<string, string>, rawBody });
          } catch {
            res.writeHead(401).end();
            return;
          }
          received.push(JSON.parse(rawBody.toString('utf8')) as ForwardDocument);
          res.writeHead(202).end();
        });
      }),
    );
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-sinks-'));
    writeFileSync(
      join(dir, 'payhooks.config.json'),
      JSON.stringify({
        mirror: false,
        forward: [
          { name: 'erp', url: `${target.url}/inbound?token=abc`, secret: { env: 'ERP_FORWARD_SECRET' }, eventTypes: ['INVOICE_PAID'] },
        ],
      }),
    );
    const serve = spawnCli(
      ['serve'],
      {
        PAYHOOKS_WEBHOOK_SECRET: 'whsec_sender',
        ERP_FORWARD_SECRET: targetSecret,
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: '',
        PAYHOOKS_LOG_LEVEL: 'debug',
      },
      dir,
    );
    const done = collect(serve, 80_000);
    const [running, ready] = [waitForLog(serve, /^running: /), waitForLog(serve, /receiving webhooks/)];
    const forwarded = waitForLog(serve, /^forwarded$/, 60_000);
    try {
      // The query string may hold a token: the log names the target without it.
      expect((await running).msg).toMatch(
        /^running: HTTP forward erp to http:\/\/127\.0\.0\.1:\d+\/inbound; 4 at once, up to 10 attempts each$/,
      );
      const url = String((await ready).url);
      const sender = createDefaultScheme({ secrets: 'whsec_sender' });
      const paid = exampleEvent('INVOICE_PAID', { eventId: 'evt_serve_forward' });
      expect((await post(url, signedDelivery(sender, paid))).status).toBe(200);
      // Not a type the target asked for: stored, and ignored by the forward sink.
      expect((await post(url, signedDelivery(sender, exampleEvent('CUSTOMER_CREATED')))).status).toBe(200);
      expect(await forwarded).toMatchObject({ eventId: 'evt_serve_forward', status: 202, attempt: 1 });
      expect(received.map((doc) => doc.eventId)).toEqual(['evt_serve_forward']);
      expect(received[0]?.payhooks.sink).toBe('forward:erp');
    } finally {
      serve.kill('SIGTERM');
      await target.close();
    }
    const served = await done;
    expect(served.code).toBe(0);
    expect(served.stdout + served.stderr).not.toContain(targetSecret);
    expect(served.stdout + served.stderr).not.toContain('token=abc');
  });

  // On a server, serve's worker runs in a child process that gets the resolved configuration: the `sinks` list holds
  // each entry's kind (code), which the child takes from the same file by name.
  it.skipIf(!pgUrl || !redisUp)(
    'runs an entry of the sinks list in its worker child (PostgreSQL): the event reaches the Redis stream',
    {
      timeout: 90_000,
    },
    async () => {
      const stream = `payhooks:test:${uniqueSchema('serve')}`;
      const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-sinks-list-'));
      writeFileSync(
        join(dir, 'payhooks.config.json'),
        JSON.stringify({ mirror: false, sinks: [{ kind: 'redis-streams', name: 'events', url: 'redis://127.0.0.1:6379', stream }] }),
      );
      const schema = uniqueSchema('serve_sinks');
      const serve = spawnCli(
        ['serve'],
        { PAYHOOKS_WEBHOOK_SECRET: 'whsec_sender', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema },
        dir,
      );
      const done = collect(serve, 80_000);
      const [running, ready] = [waitForLog(serve, /^running: /), waitForLog(serve, /receiving webhooks/)];
      const redis = createRedisClient({ url: 'redis://127.0.0.1:6379' });
      redis.on('error', () => undefined);
      await redis.connect();
      try {
        expect((await running).msg).toMatch(/^running: Redis Streams .*; 4 at once, up to 10 attempts each$/);
        const url = String((await ready).url);
        const sender = createDefaultScheme({ secrets: 'whsec_sender' });
        expect((await post(url, signedDelivery(sender, exampleEvent('INVOICE_PAID', { eventId: 'evt_serve_stream' })))).status).toBe(200);
        let ids: string[] = [];
        for (let tries = 0; tries < 300 && ids.length === 0; tries++) {
          const entries = await redis.xRange(stream, '-', '+');
          ids = (entries ?? []).map((entry) => String(entry.message.eventId));
          if (ids.length === 0) await new Promise((resolve) => setTimeout(resolve, 100));
        }
        expect(ids).toEqual(['evt_serve_stream']);
      } finally {
        serve.kill('SIGTERM');
        await redis.del(stream).catch(() => undefined);
        await redis.quit().catch(() => undefined);
      }
      expect((await done).code).toBe(0);
      const { sql } = await import('kysely');
      const { openDatabase } = await import('../../src/store/database.js');
      const store = await openDatabase({ url: pgUrl!, schema });
      await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
      await store.close();
    },
  );
});
