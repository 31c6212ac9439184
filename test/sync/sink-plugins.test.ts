import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { createClient as createRedisClient } from '@redis/client';
import { sql } from 'kysely';
import pg from 'pg';
import { pino } from 'pino';
import { describe, expect, inject, it } from 'vitest';
import { createClient, type ApiClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks } from '../../src/payhooks.js';
import { startSimulator } from '../../src/simulator/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { loadSyncConfig } from '../../src/sync/config.js';
import { type Connector, defineConnector } from '../../src/sync/connector.js';
import type { ForwardDocument } from '../../src/sync/forward-document.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import type { ResourceState } from '../../src/sync/resource-state.js';
import { SINK_KINDS, sinksSchema } from '../../src/sync/sink-registry.js';
import { registerSinks } from '../../src/sync/sinks.js';
import { putEvent } from '../helpers/inbox.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { pgUrl } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
// Probed once by test/global-setup.ts, which fails the run under CI when Redis is missing.
const { redis: redisUp } = inject('brokers');
const REDIS_URL = 'redis://127.0.0.1:6379';
const backend = backends.find((b) => b.available)!;

/** A forward target on loopback that keeps the documents it was sent. */
async function documentTarget() {
  const documents: ForwardDocument[] = [];
  const listening = await listen(
    createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('error', () => undefined);
      req.on('end', () => {
        documents.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as ForwardDocument);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    }),
  );
  return { ...listening, documents };
}

/** The entries of a Redis stream, oldest first, each as its fields. */
async function streamEntries(stream: string): Promise<Record<string, string>[]> {
  const client = createRedisClient({ url: REDIS_URL });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const entries = await client.xRange(stream, '-', '+');
    return (entries ?? []).map((entry: { message: unknown }) => ({ ...(entry.message as Record<string, string>) }));
  } finally {
    await client.del(stream);
    client.destroy();
  }
}

async function eventDone(store: PayhooksDatabase, eventId: string, status = 'done'): Promise<void> {
  await waitFor(async () => (await getEvent(store, eventId))?.status === status, `${eventId} ${status}`, 30_000);
}

describe('sinks as plugins', () => {
  it.skipIf(!redisUp)(
    'an event with a mirror, two connectors, a forward target and a Redis Streams sink costs one API read, and every sink gets the same state',
    { timeout: 60_000 },
    async () => {
      // The simulator's request log: one line per REST call it answered.
      const requests: { method: string; path: string }[] = [];
      const simulator = await startSimulator({
        logger: pino(
          { level: 'info' },
          { write: (line: string) => void requests.push(JSON.parse(line) as { method: string; path: string }) },
        ),
      });
      const target = await documentTarget();
      const store = await backend.open();
      const schema = `${store.schema}_mirror`;
      const stream = `payhooks:test:${randomUUID()}`;
      const api = createClient({ apiKey: 'sk_test_one_read', environment: simulator.url, rateLimit: false });
      const hooks = createPayhooks<ApiClient>({ database: store, logger: silent, api, worker: { pollIntervalMs: 50 } });
      const seen: Record<string, ResourceState | null> = {};
      const recording = (name: string): Connector =>
        defineConnector({
          name,
          events: ['CUSTOMER_UPDATED'],
          async handle(_event, ctx) {
            seen[name] = await ctx.currentState();
          },
        });
      try {
        const customer = await api.customers.create({ username: 'one-read', name: 'One Read' });
        await registerMirror(hooks, { schema });
        const sinks = await registerSinks(
          hooks,
          {
            forward: [{ name: 'erp', url: `${target.url}/in`, secret: 'whsec_one_read' }],
            brokers: [],
            connectors: [recording('crm'), recording('books')],
            sinks: sinksSchema.parse([{ kind: 'redis-streams', url: REDIS_URL, stream }]),
          },
          { mirrorSchema: schema, logger: silent },
        );
        expect(sinks.names).toEqual(['connector:crm', 'connector:books', 'forward:erp', 'broker:redis']);
        const event = exampleEvent('CUSTOMER_UPDATED', { eventId: `evt_one_read_${randomUUID().slice(0, 8)}`, data: { id: customer.id } });
        await putEvent(store, event);
        requests.length = 0;
        await hooks.start();
        await eventDone(store, event.eventId);
        await hooks.stop();
        await sinks.close();

        const reads = requests.filter((r) => r.method === 'GET');
        expect(reads).toEqual([expect.objectContaining({ method: 'GET', path: `/v1/customers/${customer.id}` })]);

        const state = seen.crm!;
        expect(state).toMatchObject({ kind: 'customer', id: customer.id, source: 'api', state: { id: customer.id, name: 'One Read' } });
        expect(seen.books).toEqual(state);
        expect(target.documents.map((d) => d.resource)).toEqual([state]);
        const [entry, ...more] = await streamEntries(stream);
        expect(more).toEqual([]);
        expect(entry).toMatchObject({
          eventId: event.eventId,
          eventType: 'CUSTOMER_UPDATED',
          resourceKind: 'customer',
          resourceId: customer.id,
        });
        expect((JSON.parse(entry!.document!) as ForwardDocument).resource).toEqual(state);
        const { rows } = await sql<{ data: unknown; source: string }>`select data, source from ${sql.id(schema, 'customers')}`.execute(
          store.db.withoutPlugins(),
        );
        expect(rows).toEqual([{ data: state.state, source: 'api' }]);
      } finally {
        await hooks.stop();
        await dropMirrorSchema(store, schema);
        await dispose(store);
        await target.close();
        await simulator.close();
      }
    },
  );

  it('each built-in sink kind is one file plus its line in the registry', () => {
    const root = new URL('../../src/', import.meta.url).pathname;
    const files = (readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => join(root, f));
    const registry = readFileSync(join(root, 'sync/sink-registry.ts'), 'utf8');
    for (const kind of SINK_KINDS) {
      // The one file that states the kind: its schema and create() are there.
      const stating = files.filter((f) =>
        new RegExp(`kind: '${kind.kind}',\\s*prefix: '${kind.prefix}',\\s*schema`).test(readFileSync(f, 'utf8')),
      );
      expect(stating, kind.kind).toHaveLength(1);
      const file = relative(join(root, 'sync'), stating[0]!).replace(/\.ts$/, '.js');
      // Its line in the registry (the import aside).
      expect(
        registry.split('\n').filter((line) => line.includes(`// ${file.replace(/\.js$/, '.ts')}`)),
        kind.kind,
      ).toHaveLength(1);
    }
    // The kinds added through the registry alone: nothing else in src/ imports their files.
    for (const file of ['brokers/redis-streams.js', 'mirror/change-notices.js']) {
      const importers = files.filter((f) => readFileSync(f, 'utf8').includes(`/${file.split('/').pop()}'`));
      expect(
        importers.map((f) => relative(root, f)),
        file,
      ).toEqual(['sync/sink-registry.ts']);
    }
  });

  it('refuses an unknown sink kind, naming the known kinds, in sinks and in brokers', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-sinks-'));
    const path = join(dir, 'payhooks.config.json');
    writeFileSync(path, JSON.stringify({ sinks: [{ kind: 'kafka', name: 'k' }], brokers: [{ kind: 'http-forward' }] }));
    const message = String(await loadSyncConfig({ cwd: dir }).catch((err: unknown) => err));
    expect(message).toContain(
      '- sinks.0.kind: unknown sink kind "kafka"; the known kinds are http-forward, rabbitmq, nats, redis-streams, pg-notify, connector',
    );
    expect(message).toContain('- brokers.0.kind: unknown sink kind "http-forward"; the known kinds are rabbitmq, nats, redis-streams');
  });

  it('reads a sinks list of the new kinds with their defaults, and refuses their bad settings by key', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-sinks-'));
    const path = join(dir, 'payhooks.config.json');
    writeFileSync(
      path,
      JSON.stringify({
        sinks: [
          { kind: 'redis-streams', url: REDIS_URL },
          { kind: 'pg-notify', channel: 'mirror_changes' },
        ],
      }),
    );
    const config = await loadSyncConfig({ cwd: dir });
    expect(config.sinks.map((s) => s.options)).toEqual([
      { kind: 'redis-streams', name: 'redis', url: REDIS_URL, stream: 'payhooks:events', maxLen: 100_000 },
      { kind: 'pg-notify', name: 'mirror', channel: 'mirror_changes' },
    ]);
    writeFileSync(
      path,
      JSON.stringify({
        sinks: [
          { kind: 'redis-streams', url: 'http://x', maxLen: 0 },
          { kind: 'pg-notify', channel: 'Mirror Changes; drop table x' },
        ],
      }),
    );
    const message = String(await loadSyncConfig({ cwd: dir }).catch((err: unknown) => err));
    expect(message).toContain('- sinks.0.url: expected a redis:// or rediss:// URL');
    expect(message).toMatch(/- sinks\.0\.maxLen: /);
    expect(message).toContain('- sinks.1.channel: expected a channel name of lower-case letters');
  });

  it.skipIf(!redisUp)(
    'a Redis Streams sink appends each event once, trims with MAXLEN ~, and retries while Redis is unreachable',
    { timeout: 60_000 },
    async () => {
      const store = await backend.open();
      const stream = `payhooks:test:${randomUUID()}`;
      const hooks = createPayhooks<ApiClient>({
        database: store,
        logger: silent,
        worker: { pollIntervalMs: 50, backoff: { baseMs: 50, maxMs: 200 }, maxAttempts: 100 },
      });
      try {
        // Port 1 answers nothing: each attempt fails with the reason, and the process carries on.
        const down = await registerSinks(
          hooks,
          {
            forward: [],
            brokers: [],
            connectors: [],
            sinks: sinksSchema.parse([{ kind: 'redis-streams', name: 'down', url: 'redis://127.0.0.1:1' }]),
          },
          { logger: silent },
        );
        const up = await registerSinks(
          hooks,
          {
            forward: [],
            brokers: [],
            connectors: [],
            sinks: sinksSchema.parse([{ kind: 'redis-streams', url: REDIS_URL, stream, maxLen: 10 }]),
          },
          { logger: silent },
        );
        const events = Array.from({ length: 250 }, (_, i) =>
          exampleEvent('INVOICE_PAID', { eventId: `evt_rs_${i}_${randomUUID().slice(0, 6)}` }),
        );
        for (const event of events) await putEvent(store, event);
        await hooks.start();
        await waitFor(
          async () => {
            const { rows } = await sql<{
              n: number;
            }>`select count(*)::int as n from ${sql.id(store.schema, 'handler_runs')} where handler = 'broker:redis'`.execute(store.db);
            return rows[0]!.n === events.length;
          },
          'every event added to the stream',
          45_000,
        );
        const detail = await getEvent(store, events[0]!.eventId);
        expect(detail?.lastError).toMatch(
          /cannot connect to Redis at redis:\/\/127\.0\.0\.1:1\/ stream payhooks:events: connect ECONNREFUSED/,
        );
        await hooks.stop();
        await down.close();
        await up.close();
        const entries = await streamEntries(stream);
        // MAXLEN ~ 10: Redis trims whole nodes of the stream (100 entries by default), never below 10.
        expect(entries.length).toBeGreaterThanOrEqual(10);
        expect(entries.length).toBeLessThan(events.length);
        const last = entries.at(-1)!;
        expect(last.eventId).toBe(events.at(-1)!.eventId);
        expect(new Set(entries.map((e) => e.eventId)).size).toBe(entries.length);
      } finally {
        await hooks.stop();
        await dispose(store);
      }
    },
  );

  it.skipIf(!pgUrl)(
    'the mirror change notices reach a LISTEN client on the real server once the mirror row is visible, ids only',
    { timeout: 60_000 },
    async () => {
      const store = await backends[0]!.open();
      const schema = `${store.schema}_mirror`;
      const channel = `changes_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const listener = new pg.Client({ connectionString: pgUrl! });
      const observer = new pg.Client({ connectionString: pgUrl! });
      await listener.connect();
      await observer.connect();
      const notices: { payload: unknown; rowVisible: boolean }[] = [];
      listener.on('notification', (message) => {
        const payload = JSON.parse(message.payload ?? 'null') as { id: string };
        void observer
          .query(`select 1 from "${schema}".customers where id = $1`, [payload.id])
          .then((result) => notices.push({ payload, rowVisible: result.rowCount === 1 }));
      });
      await listener.query(`listen ${channel}`);
      const hooks = createPayhooks<ApiClient>({ database: store, logger: silent, worker: { pollIntervalMs: 50 } });
      try {
        await registerMirror(hooks, { schema });
        const sinks = await registerSinks(
          hooks,
          { forward: [], brokers: [], connectors: [], sinks: sinksSchema.parse([{ kind: 'pg-notify', channel }]) },
          { mirrorSchema: schema, logger: silent },
        );
        expect(sinks.names).toEqual(['notify:mirror']);
        const event = exampleEvent('CUSTOMER_CREATED', {
          eventId: `evt_notice_${randomUUID().slice(0, 8)}`,
          data: { id: 'cus_notice', username: 'n' },
        });
        await putEvent(store, event);
        await hooks.start();
        await eventDone(store, event.eventId);
        await waitFor(() => notices.length === 1, 'one notice');
        expect(notices).toEqual([
          { payload: { account: 'default', kind: 'customer', id: 'cus_notice', eventId: event.eventId }, rowVisible: true },
        ]);
      } finally {
        await hooks.stop();
        await listener.end();
        await observer.end();
        await dropMirrorSchema(store, schema);
        await dispose(store);
      }
    },
  );

  it.each(backends.filter((b) => b.available).map((b) => [b.name, b] as const))(
    'the change notices reach store.listen in the same process (%s: PGlite delivers them in-process too)',
    async (_name, chosen) => {
      const store = await chosen.open();
      const schema = `${store.schema}_mirror`;
      const channel = `changes_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const notices: { payload: unknown; rowVisible: boolean }[] = [];
      const unlisten = await store.listen(channel, (payload) => {
        const notice = JSON.parse(payload) as { id: string };
        void sql<{ id: string }>`select id from ${sql.id(schema, 'invoices')} where id = ${notice.id}`
          .execute(store.db.withoutPlugins())
          .then((result) => notices.push({ payload: notice, rowVisible: result.rows.length === 1 }));
      });
      const hooks = createPayhooks<ApiClient>({ database: store, logger: silent, worker: { pollIntervalMs: 50 } });
      try {
        await registerMirror(hooks, { schema });
        await registerSinks(
          hooks,
          { forward: [], brokers: [], connectors: [], sinks: sinksSchema.parse([{ kind: 'pg-notify', name: 'app', channel }]) },
          { mirrorSchema: schema, logger: silent },
        );
        const event = exampleEvent('INVOICE_CREATED', { eventId: `evt_notice_${randomUUID().slice(0, 8)}` });
        await putEvent(store, event);
        await hooks.start();
        await eventDone(store, event.eventId);
        await waitFor(() => notices.length === 1, 'one notice');
        expect(notices).toEqual([
          { payload: { account: 'default', kind: 'invoice', id: event.data.invoiceId, eventId: event.eventId }, rowVisible: true },
        ]);
        // Sent on the first attempt: the mirror had completed the event when the notice ran.
        expect((await getEvent(store, event.eventId))?.attempts).toBe(1);
      } finally {
        await hooks.stop();
        await unlisten();
        await dropMirrorSchema(store, schema);
        await dispose(store);
      }
    },
    60_000,
  );

  it('the change notices refuse to start without the mirror', async () => {
    const store = await backend.open();
    const hooks = createPayhooks<ApiClient>({ database: store, logger: silent });
    try {
      await expect(
        registerSinks(
          hooks,
          { forward: [], brokers: [], connectors: [], sinks: sinksSchema.parse([{ kind: 'pg-notify', channel: 'c' }]) },
          { logger: silent },
        ),
      ).rejects.toThrow(/the mirror is off: turn it on/);
    } finally {
      await dispose(store);
    }
  });
});
