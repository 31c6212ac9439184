// The alarms of serve, in process: startService on the embedded database with the simulator on loopback as the
// sender, short thresholds. A receiver whose secret is out of step fires the signature alarm (and the sender's own
// history shows the failures); a sender that delivers nothing while invoices are created fires the silence alarm;
// each clears once its cause is gone. Read the way an operator does: GET /admin/api/health and /metrics.
import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { type ApiClient, createClient } from '../../src/client/index.js';
import { defineServiceConfig, type RunningService, type ServiceConfigInput, startService } from '../../src/service/index.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { freePort } from '../helpers/servers.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
const TOKEN = randomBytes(32).toString('hex');
const API_KEY = 'sk_test_alarms';

interface Check {
  name: string;
  status: 'ok' | 'firing' | 'unknown';
  message: string;
}

async function health(service: RunningService): Promise<{ status: string; checks: Check[] }> {
  const response = await fetch(`${service.url}/admin/api/health`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  return (await response.json()) as { status: string; checks: Check[] };
}

async function statusOf(service: RunningService, alarm: string): Promise<Check['status']> {
  return (await health(service)).checks.find((check) => check.name === alarm)!.status;
}

/** `payhooks_alarm_firing{alarm="…"}` as /metrics shows it. */
async function firingMetric(service: RunningService, alarm: string): Promise<number | undefined> {
  const text = await (await fetch(`${service.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`payhooks_alarm_firing{alarm="${alarm}"}`));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

/** The service with alarm thresholds of a test: evaluated every 100 ms, the API probed every 200 ms. */
function configOf(port: number, secrets: string[], simulator: Simulator, alarms: ServiceConfigInput['alarms'] = {}) {
  return defineServiceConfig({
    receiver: { host: '127.0.0.1', port, secrets },
    database: { dataDir: 'memory://' },
    api: { key: API_KEY, url: simulator.url },
    console: { adminToken: TOKEN },
    metrics: { processMetrics: false },
    sweeper: { everyMs: null },
    alarms: { evaluateEveryMs: 100, apiProbeEveryMs: 200, ...alarms },
  });
}

async function newInvoice(api: ApiClient, name: string) {
  const customer = await api.customers.create({ username: `${name}-${randomBytes(4).toString('hex')}`, name });
  return api.invoices.create({
    customerId: customer.id,
    dueDate: new Date(Date.now() + 86_400_000).toISOString(),
    items: [{ quantity: 1, concept: { displayName: 'Plan', amount: 1000, currency: 'MXN' } }],
  });
}

describe('alarms of serve', { timeout: 120_000 }, () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    cleanup.length = 0;
  });

  it('fires the signature alarm while every delivery is refused, and it clears once the secret is right again', async () => {
    const simulator = await startSimulator({ logger: silent, timeScale: 100 });
    cleanup.push(() => simulator.close());
    const api = createClient({ apiKey: API_KEY, environment: simulator.url, rateLimit: false });
    const port = await freePort();
    const endpoint = await api.webhooks.create({
      url: `http://127.0.0.1:${port}/webhooks`,
      description: 'alarms',
      enabledEvents: ['CUSTOMER_CREATED', 'INVOICE_CREATED'],
    });
    const { secret } = await api.webhooks.getSecret(endpoint.id);
    const alarms = { signature: { minFailures: 3, windowMs: 60_000 }, sender: { minFailed: 1, windowMs: 60_000 } };

    // The receiver's secret changed (a rotation half done): every delivery is refused.
    const wrong = await startService(configOf(port, ['whsec-not-the-endpoints-secret'], simulator, alarms), { logger: silent });
    cleanup.push(() => wrong.close());
    expect(await statusOf(wrong, 'signature_failures')).toBe('ok');
    await newInvoice(api, 'Ana');
    await newInvoice(api, 'Bea');
    await waitFor(async () => (await statusOf(wrong, 'signature_failures')) === 'firing', 'the signature alarm to fire', 30_000);
    const report = await health(wrong);
    expect(report.status).toBe('firing');
    expect(report.checks.find((c) => c.name === 'signature_failures')?.message).toMatch(/refused for their signature/);
    expect(await firingMetric(wrong, 'signature_failures')).toBe(1);
    // The sender's own history says the same: its latest tries were answered 401.
    await waitFor(async () => (await statusOf(wrong, 'sender_failures')) === 'firing', "the sender's view to show the failures", 30_000);
    expect(report.checks.find((c) => c.name === 'backlog_age')?.status).toBe('ok');
    await wrong.close();

    // Fixed: the right secret, the service started again, and the failed deliveries sent again by the operator.
    const right = await startService(configOf(port, [secret], simulator, alarms), { logger: silent });
    cleanup.push(() => right.close());
    for (const record of simulator.webhookEvents()) if (record.status !== 'delivered') await api.webhookEvents.retry(record.id);
    await waitFor(async () => (await statusOf(right, 'sender_failures')) === 'ok', "the sender's view to clear", 30_000);
    expect(await statusOf(right, 'signature_failures')).toBe('ok');
    expect(await firingMetric(right, 'signature_failures')).toBe(0);
    expect(await firingMetric(right, 'sender_failures')).toBe(0);
    const stored = await right.hooks.ready();
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from ${sql.id(stored.schema, 'inbox_events')}`.execute(stored.db);
    expect(rows[0]?.n).toBeGreaterThanOrEqual(4);
  });

  it('fires the silence alarm while the sender delivers nothing and invoices are created, and clears when it delivers', async () => {
    const simulator = await startSimulator({ logger: silent });
    cleanup.push(() => simulator.close());
    const api = createClient({ apiKey: API_KEY, environment: simulator.url, rateLimit: false });
    const port = await freePort();
    // The sender reaches the service through a proxy that the test can take away.
    const proxy: TcpProxy = await startTcpProxy(port);
    cleanup.push(() => proxy.close());
    const endpoint = await api.webhooks.create({
      url: `http://127.0.0.1:${proxy.port}/webhooks`,
      description: 'alarms',
      enabledEvents: ['CUSTOMER_CREATED', 'INVOICE_CREATED'],
    });
    const { secret } = await api.webhooks.getSecret(endpoint.id);
    const service = await startService(configOf(port, [secret], simulator, { silence: { afterMs: 1500, graceMs: 0 } }), { logger: silent });
    cleanup.push(() => service.close());

    // Quiet and nothing happening: not an alarm.
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(await statusOf(service, 'sender_silence')).toBe('ok');

    await proxy.cut();
    await newInvoice(api, 'Carla');
    // It may fire first on the customer's delivery record alone, before the invoice exists (newInvoice makes the
    // customer first); the probe after the invoice names it.
    let silence: Check | undefined;
    await waitFor(
      async () => {
        silence = (await health(service)).checks.find((c) => c.name === 'sender_silence');
        return silence?.status === 'firing' && /invoice inv\S* created/.test(silence.message);
      },
      'the silence alarm to fire, naming the invoice',
      30_000,
    );
    expect(silence?.message).toMatch(/the sender is not delivering to this endpoint/);
    expect(await firingMetric(service, 'sender_silence')).toBe(1);

    // Delivering again: the next invoice's events arrive.
    await proxy.restore();
    await newInvoice(api, 'Dora');
    await waitFor(async () => (await statusOf(service, 'sender_silence')) === 'ok', 'the silence alarm to clear', 30_000);
    expect(await firingMetric(service, 'sender_silence')).toBe(0);
  });

  it('runs a verify from the console (POST /admin/api/verify, console token only) and shows its last result', async () => {
    const simulator = await startSimulator({ logger: silent });
    cleanup.push(() => simulator.close());
    const api = createClient({ apiKey: API_KEY, environment: simulator.url, rateLimit: false });
    const port = await freePort();
    const endpoint = await api.webhooks.create({
      url: `http://127.0.0.1:${port}/webhooks`,
      description: 'verify',
      enabledEvents: ['CUSTOMER_CREATED'],
    });
    const { secret } = await api.webhooks.getSecret(endpoint.id);
    // No handlers: the mirror runs, and the customer's event writes its row.
    const service = await startService(configOf(port, [secret], simulator), { logger: silent });
    cleanup.push(() => service.close());
    await api.customers.create({ username: 'verify-me', name: 'Vera' });
    const bearer = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
    await waitFor(async () => {
      const { byStatus } = (await (await fetch(`${service.url}/admin/api/stats`, { headers: bearer })).json()) as {
        byStatus: { done: number };
      };
      return byStatus.done === 1;
    }, 'the event to be mirrored');

    const anonymous = await fetch(`${service.url}/admin/api/verify`, { method: 'POST', body: '{}' });
    expect(anonymous.status).toBe(401);
    const bad = await fetch(`${service.url}/admin/api/verify`, { method: 'POST', headers: bearer, body: '{"sample":0}' });
    expect(bad.status).toBe(400);
    const started = await fetch(`${service.url}/admin/api/verify`, { method: 'POST', headers: bearer, body: '{"sample":5,"repair":true}' });
    expect(started.status).toBe(202);
    expect(await started.json()).toMatchObject({ running: { sample: 5, repair: true } });
    type VerifyState = { running: unknown; last: { trigger: string; outcome: string; verify: { checked: number; drift: number } } | null };
    let state: VerifyState | undefined;
    await waitFor(async () => {
      state = (await (await fetch(`${service.url}/admin/api/verify`, { headers: bearer })).json()) as VerifyState;
      return state.running === null && state.last !== null;
    }, 'the verify to finish');
    expect(state!.last).toMatchObject({ trigger: 'console', outcome: 'clean', verify: { drift: 0 } });
    expect(state!.last!.verify.checked).toBeGreaterThanOrEqual(1);
    // The console's run is the newest sweep: the next evaluation of the alarms shows it.
    await waitFor(async () => {
      const report = (await (await fetch(`${service.url}/admin/api/health`, { headers: bearer })).json()) as {
        sweeper: { trigger: string } | null;
      };
      return report.sweeper?.trigger === 'console';
    }, 'GET /admin/api/health to show the console verify');
    // The run is on /metrics, but the sweeper is off here (sweeper.everyMs null): no interval, so the staleness rule
    // (docs/alerts.yaml) stays quiet however old the run gets.
    const scrape = await (await fetch(`${service.url}/metrics`)).text();
    expect(scrape).toMatch(/^payhooks_sweeper_last_run_timestamp_seconds \d/m);
    expect(scrape).toMatch(/^payhooks_sweeper_last_run_failed 0$/m);
    expect(scrape).not.toMatch(/^payhooks_sweeper_interval_seconds /m);
  });
});
