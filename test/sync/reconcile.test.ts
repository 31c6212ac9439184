import { mkdtempSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient, type ApiClient } from '../../src/client/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { startSimulator } from '../../src/simulator/index.js';
import { listEvents } from '../../src/store/inbox.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { startPeriodicReconcile } from '../../src/sync/periodic-reconcile.js';
import { AmbiguousEndpointError, deliveryInFlight, reconcile } from '../../src/sync/reconcile.js';
import { startApiServer, type ApiServer } from '../helpers/api-server.js';
import { runCli } from '../helpers/cli.js';
import { freePort } from '../helpers/servers.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

const silent = pino({ level: 'silent' });

describe.each(backends.filter((b) => b.available))('payhooks reconcile ($name)', (backend) => {
  it('after the sender gave up on a receiver that was down, brings every missed event into the inbox and the mirror', {
    timeout: 90_000,
  }, async () => {
    // timeScale 1e6: the sender's eight retries (2 s … 3 days) take a few milliseconds.
    const simulator = await startSimulator({ logger: silent, timeScale: 1_000_000 });
    const store = await backend.open();
    const mirrorSchema = `${store.schema}_mirror`;
    const port = await freePort();
    let hooks: Payhooks<ApiClient> | undefined;
    const server = createServer((req, res) => void hooks!.node()(req, res));
    try {
      const client = createClient({ apiKey: 'sk_test_reconcile', environment: simulator.url, rateLimit: false });
      const endpoint = await client.webhooks.create({
        url: `http://127.0.0.1:${port}/webhooks`,
        description: 'down for a while',
        enabledEvents: ['CUSTOMER_CREATED', 'INVOICE_CREATED', 'SUBSCRIPTION_CREATED'],
      });
      const { secret } = await client.webhooks.getSecret(endpoint.id);
      hooks = createPayhooks({ secret, database: store, logger: silent, api: client, worker: { pollIntervalMs: 50 } });
      await registerMirror(hooks, { schema: mirrorSchema });

      // While nothing listens: a customer, two invoices and a subscription event, all given up on.
      const customer = await client.customers.create({ username: 'missed' });
      const invoices = await Promise.all(
        [1, 2].map((n) =>
          client.invoices.create({
            customerId: customer.id,
            dueDate: '2026-12-01T06:00:00Z',
            items: [{ quantity: n, concept: { displayName: 'Missed', amount: 1000, currency: 'MXN' } }],
          }),
        ),
      );
      const subscriptionEvent = simulator.emit('SUBSCRIPTION_CREATED');
      await waitFor(
        () => simulator.webhookEvents().length === 4 && simulator.webhookEvents().every((record) => record.status === 'failed'),
        'the sender to give up on all four',
        30_000,
      );

      // The receiver is back; one event also arrived some other way, so only three are missing.
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      await hooks.start();
      const firstRecord = simulator.webhookEvents()[0]!;
      await client.webhookEvents.retry(firstRecord.id);
      await waitFor(async () => (await listEvents(store)).length === 1, 'the one event re-sent by hand');

      const dry = await reconcile({ store, api: client, dryRun: true });
      expect(dry.missing).toHaveLength(3);
      expect(dry.resent).toEqual([]);
      expect((await listEvents(store)).length).toBe(1);

      const report = await reconcile({ store, api: client });
      expect(report).toMatchObject({ listed: 4, endpointId: endpoint.id, unrecovered: [] });
      expect(report.missing.map((m) => m.eventId).sort()).toEqual(
        simulator
          .webhookEvents()
          .filter((record) => record.id !== firstRecord.id)
          .map((record) => record.eventId)
          .sort(),
      );
      expect(report.resent).toHaveLength(3);
      await waitFor(async () => (await listEvents(store, { status: 'done' })).length === 4, 'all four events done', 30_000);

      const rows = async (table: string) =>
        (
          await sql<{ id: string; source: string }>`select id, source from ${sql.id(mirrorSchema, table)} order by id`.execute(
            store.db.withoutPlugins(),
          )
        ).rows;
      expect(await rows('customers')).toEqual([{ id: customer.id, source: 'api' }]);
      expect((await rows('invoices')).map((r) => r.id).sort()).toEqual(invoices.map((i) => i.id).sort());
      expect(await rows('subscriptions')).toEqual([{ id: subscriptionEvent.data.subscription.id, source: 'event' }]);

      // A second run finds nothing missing and asks for nothing.
      expect(await reconcile({ store, api: client })).toMatchObject({ missing: [], resent: [] });

      // A second endpoint in the history: without --endpoint the run refuses rather than re-send another app's deliveries.
      await client.webhooks.create({ url: 'http://127.0.0.1:9/other', description: 'another app', enabledEvents: ['CUSTOMER_CREATED'] });
      await client.customers.create({ username: 'second-endpoint' });
      await waitFor(() => simulator.webhookEvents().length === 6, 'the new deliveries to be recorded');
      // The new customer's event reaches this receiver too; until it is stored, reconcile rightly counts it missing.
      await waitFor(async () => (await listEvents(store)).length === 5, 'the new customer event stored');
      await expect(reconcile({ store, api: client })).rejects.toThrow(AmbiguousEndpointError);
      await expect(reconcile({ store, api: client })).rejects.toThrow(/Name the one this payhooks receives for with --endpoint ID/);
      expect((await reconcile({ store, api: client, endpointId: endpoint.id, dryRun: true })).missing).toHaveLength(0);
    } finally {
      await hooks?.stop();
      await new Promise((resolve) => server.close(resolve));
      await simulator.close();
      await dropMirrorSchema(store, mirrorSchema);
      await dispose(store);
    }
  });
});

describe('reconcile and a delivery under way', () => {
  const pglite = backends.find((b) => b.name === 'pglite')!;

  it('neither counts nor asks again for an event being delivered now, and re-sends one that waits for a retry', {
    timeout: 60_000,
  }, async () => {
    // timeScale 0.01: after a failed delivery the sender's next try is 200 s away, so that record is pending and not due.
    const simulator = await startSimulator({ logger: silent, timeScale: 0.01 });
    const store = await pglite.open();
    const port = await freePort();
    let hooks: Payhooks<ApiClient> | undefined;
    // The first POST is refused; the second is held (its delivery under way) until the test lets it through.
    let posts = 0;
    const held: [IncomingMessage, ServerResponse][] = [];
    const server = createServer((req, res) => {
      posts++;
      if (posts === 1) res.writeHead(500).end();
      else if (posts === 2) held.push([req, res]);
      else void hooks!.node()(req, res);
    });
    try {
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      const client = createClient({ apiKey: 'sk_test_in_flight', environment: simulator.url, rateLimit: false });
      const endpoint = await client.webhooks.create({
        url: `http://127.0.0.1:${port}/webhooks`,
        description: 'slow',
        enabledEvents: ['SUBSCRIPTION_CREATED', 'SUBSCRIPTION_UPDATED'],
      });
      const { secret } = await client.webhooks.getSecret(endpoint.id);
      hooks = createPayhooks({ secret, database: store, logger: silent, api: client, worker: { pollIntervalMs: 50 } });
      await hooks.start();

      const refused = simulator.emit('SUBSCRIPTION_CREATED');
      await waitFor(() => simulator.webhookEvents()[0]?.attempts.length === 1, 'the first delivery to be refused');
      const underWay = simulator.emit('SUBSCRIPTION_UPDATED');
      await waitFor(() => held.length === 1, 'the second delivery to arrive');

      const report = await reconcile({ store, api: client });
      expect(report.missing.map((m) => m.eventId)).toEqual([refused.eventId]);
      expect(report.inFlight).toEqual([{ eventId: underWay.eventId, eventType: 'SUBSCRIPTION_UPDATED' }]);
      expect(report.resent).toEqual([refused.eventId]);
      await waitFor(async () => (await listEvents(store)).length === 1, 'the refused event re-sent and stored');
      // Nothing was asked for the event under way: the refused one, the held one and the refused one again reached the
      // server, and the simulator has no answered POST of the held one.
      expect(posts).toBe(3);
      expect(simulator.deliveryPosts().filter((post) => post.eventId === underWay.eventId)).toHaveLength(0);

      // With no window, the same delivery counts as missing again (what every run did before).
      const strict = await reconcile({ store, api: client, dryRun: true, inFlightMs: 0 });
      expect(strict).toMatchObject({ missing: [{ eventId: underWay.eventId }], inFlight: [] });

      const [req, res] = held[0]!;
      void hooks.node()(req, res);
      await waitFor(async () => (await listEvents(store)).length === 2, 'the held delivery stored');
      await waitFor(() => simulator.webhookEvents().every((record) => record.status === 'delivered'), 'both recorded delivered');
      expect(await reconcile({ store, api: client })).toMatchObject({ missing: [], inFlight: [], resent: [] });
      await expect(reconcile({ store, api: client, inFlightMs: -1 })).rejects.toThrow(/inFlightMs must be/);
    } finally {
      for (const [, res] of held) res.destroy();
      await hooks?.stop();
      await new Promise((resolve) => server.close(resolve));
      await simulator.close();
      await dispose(store);
    }
  });

  it('is a pending delivery whose next try fell due within the window', () => {
    const now = Date.parse('2026-11-28T12:00:00Z');
    const at = (offsetMs: number) => new Date(now + offsetMs).toISOString();
    const record = { status: 'pending', attempts: [], createdAt: at(-5_000), nextAttemptAt: at(0) };
    expect(deliveryInFlight(record, now)).toBe(true);
    expect(deliveryInFlight({ ...record, nextAttemptAt: at(-30_000) }, now)).toBe(true);
    // Due a while ago and still pending: the sender is behind, and asking again helps.
    expect(deliveryInFlight({ ...record, nextAttemptAt: at(-120_000) }, now)).toBe(false);
    // A try still to come, soon or in hours: the last one failed, and the event is missing until one succeeds.
    expect(deliveryInFlight({ ...record, nextAttemptAt: at(2_000) }, now)).toBe(false);
    expect(deliveryInFlight({ ...record, nextAttemptAt: at(3_600_000) }, now)).toBe(false);
    expect(deliveryInFlight({ ...record, status: 'failed' }, now)).toBe(false);
    // A record that shows no next try: in flight only while no attempt has been made, from its creation.
    expect(deliveryInFlight({ ...record, nextAttemptAt: null }, now)).toBe(true);
    const attempt = { attemptNumber: 1, attemptedAt: at(-4_000), responseStatus: 500 };
    expect(deliveryInFlight({ ...record, nextAttemptAt: null, attempts: [attempt] }, now)).toBe(false);
    expect(deliveryInFlight(record, now, 0)).toBe(false);
  });
});

describe('payhooks reconcile on the command line', () => {
  // Its refusals of bad input, which open nothing, are in test/sync/reconcile-arguments.test.ts (unit tier, in-process).
  it('prints what it found and did, against the simulator', { timeout: 60_000 }, async () => {
    const simulator = await startSimulator({ logger: silent, timeScale: 1_000_000 });
    try {
      const client = createClient({ apiKey: 'sk_test_cli', environment: simulator.url, rateLimit: false });
      await client.webhooks.create({
        url: `http://127.0.0.1:${await freePort()}/webhooks`,
        description: 'down',
        enabledEvents: ['CUSTOMER_CREATED'],
      });
      await client.customers.create({ username: 'cli-missed' });
      await waitFor(() => simulator.webhookEvents()[0]?.status === 'failed', 'the sender to give up');
      const dir = mkdtempSync(join(tmpdir(), 'payhooks-reconcile-'));
      seedDefaultDataDir(dir);
      const env = { DATABASE_URL: '', PAYHOOKS_API_KEY: 'sk_test_cli', PAYHOOKS_API_URL: simulator.url };
      const dry = await runCli(['reconcile', '--since', '1d', '--dry-run'], env, dir);
      expect(dry.code).toBe(0);
      expect(dry.stdout).toMatch(
        /events the inbox never stored: 1\n {2}CUSTOMER_CREATED evt_\S+ \(failed\)\ndry run: nothing was asked for/,
      );
      const done = await runCli(['reconcile', '--json'], env, dir);
      expect(done.code).toBe(0);
      expect(JSON.parse(done.stdout)).toMatchObject({ listed: 1, resent: [expect.stringMatching(/^evt_/)], unrecovered: [] });
    } finally {
      await simulator.close();
    }
  });
});

describe('periodic reconciliation (serve with reconcile.every)', () => {
  it('runs at its interval, never two at once, and stops cleanly', { timeout: 60_000 }, async () => {
    const simulator = await startSimulator({ logger: silent, timeScale: 1_000_000 });
    const store = await backends.find((b) => b.name === 'pglite')!.open();
    const port = await freePort();
    let hooks: Payhooks<ApiClient> | undefined;
    const server = createServer((req, res) => void hooks!.node()(req, res));
    const logged: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => logged.push(JSON.parse(line).msg as string) });
    try {
      const client = createClient({ apiKey: 'sk_test_periodic', environment: simulator.url, rateLimit: false });
      const endpoint = await client.webhooks.create({
        url: `http://127.0.0.1:${port}/webhooks`,
        description: 'down',
        enabledEvents: ['CUSTOMER_CREATED'],
      });
      await client.customers.create({ username: 'periodic' });
      await waitFor(() => simulator.webhookEvents()[0]?.status === 'failed', 'the sender to give up');
      hooks = createPayhooks({ secret: (await client.webhooks.getSecret(endpoint.id)).secret, database: store, logger: silent });
      await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
      const periodic = startPeriodicReconcile({ store, api: client, lookbackMs: 86_400_000 }, 200, logger);
      await waitFor(async () => (await listEvents(store)).length === 1, 'the periodic run to have the event re-sent', 10_000);
      await waitFor(() => logged.filter((msg) => msg === 'reconciliation finished').length >= 2, 'a second run');
      await periodic.stop();
      const runs = logged.length;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(logged.length).toBe(runs);
    } finally {
      await hooks?.stop();
      await new Promise((resolve) => server.close(resolve));
      await simulator.close();
      await dispose(store);
    }
  });
});

/**
 * A delivery history served by an API that ignores `skip`: every request gets the same full page of 100 records.
 * Past `cutOffAfter` requests it answers 400, so that a walk that does not stop by itself ends anyway.
 */
async function historyIgnoringSkip(cutOffAfter = 50): Promise<ApiServer> {
  const server = await startApiServer();
  const createdAt = new Date(Date.now() - 3_600_000).toISOString();
  const page = Array.from({ length: 100 }, (_, n) => ({
    id: `whe_${n}`,
    endpointId: 'wh_1',
    eventId: `evt_stuck_${n}`,
    eventType: 'CUSTOMER_CREATED',
    status: 'failed',
    attempts: [],
    createdAt,
  }));
  server.route('GET', '/v1/webhook-events', () =>
    server.requests.length > cutOffAfter ? { status: 400, json: { error: { message: 'cut off by the test' } } } : { json: { data: page } },
  );
  return server;
}

describe('reconcile against an API that ignores skip (the same page every time)', () => {
  it('stops at the first page that brings nothing new, with a warning, and still reports what it read', { timeout: 60_000 }, async () => {
    const server = await historyIgnoringSkip();
    const store = await backends.find((b) => b.name === 'pglite')!.open();
    try {
      const api = createClient({ apiKey: 'sk_test_stuck', environment: server.url, rateLimit: false });
      const report = await reconcile({ store, api, dryRun: true });
      // The first page, then the same page again: two list requests, not 1,745 in 45 s.
      expect(server.requests.filter((r) => r.path === '/v1/webhook-events')).toHaveLength(2);
      expect(report).toMatchObject({ listed: 100, endpointId: 'wh_1', resent: [] });
      expect(report.missing).toHaveLength(100);
      expect(report.warnings).toEqual([
        'The delivery history (GET /v1/webhook-events) could not be read to its end: The list page at skip=100 holds only records ' +
          'already read (the first: whe_0): the service seems to ignore skip. The walk stopped after 2 requests rather than read the same records again.',
      ]);
    } finally {
      await server.close();
      await dispose(store);
    }
  });

  it('payhooks reconcile ends by itself, prints the warning on stderr and exits 1', { timeout: 90_000 }, async () => {
    const server = await historyIgnoringSkip();
    try {
      const dir = mkdtempSync(join(tmpdir(), 'payhooks-reconcile-stuck-'));
      // A migrated database already (its first start is not the subject): no initdb and migrations to wait for.
      seedDefaultDataDir(dir);
      const env = { DATABASE_URL: '', PAYHOOKS_API_KEY: 'sk_test_stuck', PAYHOOKS_API_URL: server.url };
      const result = await runCli(['reconcile', '--dry-run'], env, dir);
      expect(result.code).toBe(1);
      expect(result.stdout).toContain('events the inbox never stored: 100');
      expect(result.stderr).toMatch(
        /warning: The delivery history \(GET \/v1\/webhook-events\) could not be read to its end: The list page at skip=100 holds only records already read/,
      );
      expect(server.requests.filter((r) => r.path === '/v1/webhook-events')).toHaveLength(2);
    } finally {
      await server.close();
    }
  });
});

describe('the reconciliation interval', () => {
  it('is refused when a timer cannot hold it (30 days fired every millisecond)', async () => {
    const store = await backends.find((b) => b.name === 'pglite')!.open();
    try {
      const api = createClient({ apiKey: 'sk_test_interval', environment: 'http://127.0.0.1:9', rateLimit: false });
      for (const everyMs of [30 * 86_400_000, 0]) {
        expect(() => startPeriodicReconcile({ store, api, lookbackMs: 86_400_000 }, everyMs, silent)).toThrow(
          new RegExp(`The reconciliation interval \\(everyMs\\) must be a number of milliseconds from 1 to 2147483647 .*not ${everyMs}\\.`),
        );
      }
    } finally {
      await dispose(store);
    }
  });
});
