// /metrics of a running serve, scraped and parsed as Prometheus does, while events flow; and the logs of the
// same run, which must hold no email, phone number, secret or API key.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startSimulator } from '../../src/simulator/index.js';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { collect, spawnCli, waitForLog } from '../helpers/cli.js';
import { freePort } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

const handlers = fileURLToPath(new URL('../fixtures/metrics-handlers.mjs', import.meta.url));
const API_KEY = 'sk_test_metrics_key_0123456789';
const EMAIL = 'maria.fernanda@example.com';
const PHONE = '+525598765432';

/** Prometheus text → one number per series, keyed `name{label="value",…}` with labels sorted. */
function parse(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels = [...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map(([, k, v]) => `${k}="${v}"`).sort();
    series.set(labels.length ? `${match[1]}{${labels.join(',')}}` : match[1]!, Number(match[3]));
  }
  return series;
}

describe('payhooks serve /metrics', () => {
  it('each named series moves as events flow, and the logs hold no personal data or secret', { timeout: 120_000 }, async () => {
    const simulator = await startSimulator({ logger: pino({ level: 'silent' }) });
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-metrics-'));
    seedDefaultDataDir(dir);
    try {
      const client = createClient({ apiKey: API_KEY, environment: simulator.url });
      const port = await freePort();
      const endpoint = await client.webhooks.create({
        url: `http://127.0.0.1:${port}/webhooks`,
        description: 'metrics',
        enabledEvents: ['INVOICE_PAID'],
      });
      const { secret } = await client.webhooks.getSecret(endpoint.id);
      const env = {
        PAYHOOKS_WEBHOOK_SECRET: secret,
        PAYHOOKS_API_KEY: API_KEY,
        PAYHOOKS_API_URL: simulator.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: '',
        PAYHOOKS_LOG_LEVEL: 'debug',
      };
      const serve = spawnCli(['serve', '--handlers', handlers], env, dir);
      const done = collect(serve, 110_000);
      const base = `http://127.0.0.1:${port}`;
      const scrape = async () => parse(await (await fetch(`${base}/metrics`)).text());
      try {
        await waitForLog(serve, /receiving webhooks/);
        const before = await scrape();
        expect(before.get('payhooks_events{status="pending"}')).toBe(0);
        // With an API key the sweeper runs, hourly by default, and has recorded no run yet: its interval is there for the
        // staleness rule, its run's time and outcome are not (a 0 would read as a run in 1970).
        expect(before.get('payhooks_sweeper_interval_seconds')).toBe(3600);
        expect(before.has('payhooks_sweeper_last_run_timestamp_seconds')).toBe(false);
        expect(before.has('payhooks_sweeper_last_run_failed')).toBe(false);
        expect(before.get('payhooks_events_dead_total')).toBe(0);

        // A paid invoice through the simulator (the handler reads it back through the API), a customer whose
        // handler fails (with an email and a phone number in the body), a payment twice, and a forged delivery.
        const customer = await client.customers.create({ username: 'metrics-ana' });
        const invoice = await client.invoices.create({
          customerId: customer.id,
          dueDate: '2026-12-01T06:00:00Z',
          items: [{ quantity: 1, concept: { displayName: 'Class', amount: 9_900, currency: 'MXN' } }],
        });
        const { payment } = await client.invoices.requestPayment(invoice.id, { paymentType: 'CASH' });
        await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
        const created = exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_metrics_customer' });
        const withPii = { ...created, data: { ...created.data, email: EMAIL, phoneNumber: PHONE } };
        expect((await fetch(`${base}/webhooks`, signedRequest(withPii, { secret }))).status).toBe(200);
        const completed = signedRequest(exampleEvent('PAYMENT_COMPLETED', { eventId: 'evt_metrics_payment' }), { secret });
        expect((await fetch(`${base}/webhooks`, completed)).status).toBe(200);
        expect((await fetch(`${base}/webhooks`, completed)).status).toBe(200);
        expect((await fetch(`${base}/webhooks`, signedRequest(withPii, { secret: 'not-the-secret' }))).status).toBe(401);

        await waitFor(
          async () => ((await scrape()).get('payhooks_handler_failures_total{account="default",handler="crm-push"}') ?? 0) >= 1,
          'the failing handler counted',
          30_000,
        );
        await waitFor(
          async () => ((await scrape()).get('payhooks_handler_duration_seconds_count{handler="read-invoice"}') ?? 0) >= 1,
          'the invoice handler counted',
          30_000,
        );
        const after = await scrape();
        expect(after.get('payhooks_deliveries_total{account="default",outcome="stored",type="INVOICE_PAID"}')).toBe(1);
        expect(after.get('payhooks_deliveries_total{account="default",outcome="stored",type="PAYMENT_COMPLETED"}')).toBe(1);
        expect(after.get('payhooks_deliveries_total{account="default",outcome="duplicate",type="PAYMENT_COMPLETED"}')).toBe(1);
        expect(after.get('payhooks_deliveries_total{account="default",outcome="rejected",type="unknown"}')).toBe(1);
        expect(after.get('payhooks_duplicate_deliveries_total{type="PAYMENT_COMPLETED"}')).toBe(1);
        expect(after.get('payhooks_signature_failures_total{reason="no_matching_signature"}')).toBe(1);
        expect(after.get('payhooks_ack_seconds_count{outcome="stored"}')).toBe(3);
        expect(after.get('payhooks_ack_seconds_bucket{le="10",outcome="stored"}')).toBe(3);
        expect(after.get('payhooks_handler_duration_seconds_count{handler="ledger"}')).toBe(1);
        expect(after.get('payhooks_handler_failures_total{account="default",handler="crm-push"}')).toBeGreaterThanOrEqual(1);
        expect(after.get('payhooks_handler_failures_total{account="default",handler="read-invoice"}')).toBeUndefined();
        expect(after.get('payhooks_api_requests_total{method="GET",status="200"}')).toBeGreaterThanOrEqual(1);
        expect(after.get('payhooks_api_request_duration_seconds_count{method="GET"}')).toBeGreaterThanOrEqual(1);
        expect(after.get('payhooks_api_rate_limit_wait_seconds_count')).toBeGreaterThanOrEqual(1);
        expect(after.get('payhooks_events{status="done"}')).toBe(2);
        // The failing customer event waits for its retry: pending (or being retried), so the backlog has an age.
        expect((after.get('payhooks_events{status="pending"}') ?? 0) + (after.get('payhooks_events{status="processing"}') ?? 0)).toBe(1);
        expect(after.get('payhooks_oldest_pending_age_seconds')).toBeGreaterThanOrEqual(0);
      } finally {
        serve.kill('SIGTERM');
      }
      const result = await done;
      expect(result.code).toBe(0);
      const logs = result.stdout + result.stderr;
      expect(logs).toContain('handler failed');
      for (const secretText of [EMAIL, 'maria.fernanda', PHONE, '5598765432', secret, API_KEY]) expect(logs).not.toContain(secretText);
    } finally {
      await simulator.close();
    }
  });
});
