// `payhooks serve` with a broker that misbehaves (issue 22): a RabbitMQ exchange that exists with another type used
// to stop the whole process, receiver included (finding 3); a NATS connection gone silent made SIGTERM take the whole
// shutdown deadline and exit 1 (finding 6). Run as processes, on PostgreSQL, against the real brokers. Whichever
// process runs the sinks (serve itself or a worker child), what is checked is serve's: its answers and its exit.
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import amqp from 'amqplib';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect as natsConnect } from '@nats-io/transport-node';
import { sql } from 'kysely';
import { describe, expect, inject, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { collect, spawnCli, waitForLog } from '../helpers/cli.js';
import { post, signedDelivery } from '../helpers/deliveries.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const { rabbitmq: rabbitUp, nats: natsUp } = inject('brokers');
const SECRET = 'whsec_serve_broker_faults';
const scheme = createDefaultScheme({ secrets: SECRET });
const AMQP_URL = 'amqp://guest:guest@127.0.0.1:5672';
const DELIVERING_MS = 20_000;

/** A folder holding `payhooks.config.json` with `config`, for serve's working directory. */
function configDir(config: object): string {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-broker-faults-'));
  writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify(config));
  return dir;
}

/** A customer of its own per event, so that no event waits behind another of the same resource. */
function customerCreated(eventId: string) {
  return exampleEvent('CUSTOMER_CREATED', { eventId, data: { id: `cus_${eventId}` } });
}

/** POSTs a delivery; a refused connection (a process that died) is status 0 rather than an exception. */
async function deliver(url: string, eventId: string): Promise<number> {
  return post(url, signedDelivery(scheme, customerCreated(eventId))).then(
    (answer) => answer.status,
    () => 0,
  );
}

describe.skipIf(!pgUrl || !rabbitUp)('payhooks serve with the mirror and a RabbitMQ sink whose exchange exists with another type', () => {
  it(`acknowledges every delivery for ${DELIVERING_MS / 1000} s and never exits; the mirror is written; the sink's events are retried with the broker's reason`, {
    timeout: 120_000,
  }, async () => {
    const schema = uniqueSchema('rmqfault');
    const mirrorSchema = uniqueSchema('rmqfault_mirror');
    const exchange = `payhooks.test.serve.${randomUUID().slice(0, 8)}`;
    const admin = await amqp.connect(AMQP_URL);
    const channel = await admin.createChannel();
    await channel.assertExchange(exchange, 'fanout', { durable: true });
    const dir = configDir({ mirror: true, brokers: [{ kind: 'rabbitmq', url: { env: 'AMQP_URL' }, exchange, queue: exchange }] });
    const serve = spawnCli(
      ['serve'],
      {
        PAYHOOKS_WEBHOOK_SECRET: SECRET,
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: pgUrl!,
        PAYHOOKS_SCHEMA: schema,
        PAYHOOKS_MIRROR_SCHEMA: mirrorSchema,
        AMQP_URL,
      },
      dir,
    );
    const done = collect(serve, 110_000);
    let store: PayhooksDatabase | undefined;
    try {
      const url = String((await waitForLog(serve, /receiving webhooks/, 60_000)).url);
      const sent: { eventId: string; at: number; status: number }[] = [];
      const started = Date.now();
      for (let i = 0; Date.now() - started < DELIVERING_MS; i++) {
        const eventId = `evt_rmq_${i}`;
        sent.push({ eventId, at: Date.now() - started, status: await deliver(url, eventId) });
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      // The process that acknowledges is alive and answering at the end.
      expect(serve.exitCode).toBeNull();
      expect(serve.signalCode).toBeNull();
      expect(sent.filter((d) => d.status !== 200)).toEqual([]);
      expect((await fetch(url.replace(/\/webhooks$/, '/healthz'))).status).toBe(200);

      store = await openDatabase({ url: pgUrl!, schema });
      const mirrored = async () => {
        const { rows } = await sql<{ id: string }>`select id from ${sql.id(mirrorSchema, 'customers')}`.execute(store!.db.withoutPlugins());
        return new Set(rows.map((r) => r.id));
      };
      const customers = sent.map((d) => `cus_${d.eventId}`);
      await waitFor(async () => (await mirrored()).size === customers.length, 'every customer in the mirror', 10_000);
      expect(await mirrored()).toEqual(new Set(customers));
      // Those delivered in the first half have had time for their second attempt (1 s of backoff, doubling).
      const early = sent.filter((d) => d.at < DELIVERING_MS / 2);
      for (const { eventId } of early) {
        const event = await getEvent(store, eventId);
        expect(event?.status, eventId).not.toBe('done');
        expect(event?.attempts, eventId).toBeGreaterThanOrEqual(2);
        expect(event?.lastError, eventId).toMatch(
          new RegExp(
            `refused to declare the exchange \\(406 PRECONDITION_FAILED\\): exchange '${exchange.replace(/\./g, '\\.')}' exists .* with type 'fanout'`,
          ),
        );
        expect(event?.completedHandlers, eventId).toEqual(['mirror']);
      }
      console.info(
        `serve with a misdeclared RabbitMQ exchange: ${sent.length} deliveries in ${DELIVERING_MS / 1000} s, all acknowledged; ` +
          `attempts of the first event: ${(await getEvent(store, sent[0]!.eventId))?.attempts}`,
      );
    } finally {
      serve.kill('SIGTERM');
      await done;
      await channel.deleteQueue(exchange).catch(() => undefined);
      await channel.deleteExchange(exchange).catch(() => undefined);
      await admin.close();
      store ??= await openDatabase({ url: pgUrl!, schema });
      await sql.raw(`drop schema if exists "${mirrorSchema}" cascade`).execute(store.db);
      await dispose(store);
    }
    const { code, stdout, stderr } = await done;
    expect(stdout + stderr).not.toContain('guest:guest');
    expect(code).toBe(0);
  });
});

describe.skipIf(!pgUrl || !natsUp)('payhooks serve with a NATS sink whose connection has gone silent', () => {
  it('stops on SIGTERM inside its shutdown deadline, with exit code 0', { timeout: 120_000 }, async () => {
    const schema = uniqueSchema('natsfault');
    const suffix = randomUUID().slice(0, 8);
    const stream = `PAYHOOKS_SERVE_FAULT_${suffix}`;
    const proxy = await startTcpProxy(4222);
    const dir = configDir({
      mirror: false,
      brokers: [{ kind: 'nats', servers: `nats://127.0.0.1:${proxy.port}`, stream, subjectPrefix: `payhooks.servefault.${suffix}` }],
    });
    const serve = spawnCli(
      ['serve'],
      { PAYHOOKS_WEBHOOK_SECRET: SECRET, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema },
      dir,
    );
    const done = collect(serve, 110_000);
    const store = await openDatabase({ url: pgUrl!, schema });
    const reader = await natsConnect({ servers: 'nats://127.0.0.1:4222' });
    try {
      const url = String((await waitForLog(serve, /receiving webhooks/, 60_000)).url);
      expect(await deliver(url, 'evt_nats_first')).toBe(200);
      await waitFor(async () => (await getEvent(store, 'evt_nats_first'))?.status === 'done', 'the first event published', 30_000);

      proxy.blackhole();
      for (let i = 0; i < 3; i++) expect(await deliver(url, `evt_nats_silent_${i}`)).toBe(200);
      // Their publishes are under way on the silent connection when the stop is asked for.
      await waitFor(
        async () => (await getEvent(store, 'evt_nats_silent_0'))?.status === 'processing',
        'a publish waiting on the silent connection',
        30_000,
      );
      const stopping = Date.now();
      serve.kill('SIGTERM');
      const { code, stdout } = await done;
      console.info(`serve with a silent NATS connection stopped in ${Date.now() - stopping} ms with code ${code}`);
      expect(stdout).not.toContain('shutdown did not finish in time');
      expect(code).toBe(0);
    } finally {
      serve.kill('SIGKILL');
      await (await jetstreamManager(reader)).streams.delete(stream).catch(() => undefined);
      await reader.close();
      await proxy.close();
      await dispose(store);
    }
  });
});
