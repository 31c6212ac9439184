import { mkdtempSync, readFileSync } from 'node:fs';
import { freePort } from '../helpers/servers.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startSimulator } from '../../src/simulator/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { collect, runCli, runInProcess, spawnCli, waitForLog } from '../helpers/cli.js';
import { post, signedDelivery } from '../helpers/deliveries.js';
import { waitFor } from '../helpers/wait.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

const handlers = fileURLToPath(new URL('../fixtures/handlers.mjs', import.meta.url));
const typoHandlers = fileURLToPath(new URL('../fixtures/typo-handlers.mjs', import.meta.url));
const apiHandlers = fileURLToPath(new URL('../fixtures/api-handlers.mjs', import.meta.url));

/** True once the handler has written to the file (it does not exist before). */
function hasContent(path: string): boolean {
  try {
    return readFileSync(path, 'utf8').length > 0;
  } catch {
    return false;
  }
}

const scheme = createDefaultScheme({ secrets: ['serve-secret'] });

describe('payhooks serve with handlers', () => {
  it('runs receiver and worker together: a delivery is handled once and ends done; /healthz, /readyz and /metrics answer', {
    timeout: 90_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-'));
    seedDefaultDataDir(dir);
    const handled = join(dir, 'handled.txt');
    const env = { PAYHOOKS_WEBHOOK_SECRET: 'serve-secret', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '', HANDLED_FILE: handled };
    const serve = spawnCli(['serve', '--handlers', handlers], env, dir);
    const done = collect(serve, 80_000);
    const url = String((await waitForLog(serve, /receiving webhooks/)).url);
    const base = url.replace(/\/webhooks$/, '');

    const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_served' });
    expect((await post(url, signedDelivery(scheme, event))).status).toBe(200);
    expect((await post(url, signedDelivery(scheme, event))).body).toEqual({ received: true, duplicate: true });
    await waitFor(() => hasContent(handled), 'the handler to run');

    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${base}/readyz`)).json()).toEqual({ ready: true });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/payhooks_webhook_responses_total\{status="200"\} 2/);

    serve.kill('SIGTERM');
    expect((await done).code).toBe(0);
    expect(readFileSync(handled, 'utf8')).toBe(`evt_served ${event.data.invoiceId}\n`);
    const listed = JSON.parse((await runInProcess(['events', 'list', '--json'], {}, dir)).stdout) as { status: string }[];
    expect(listed.map((e) => e.status)).toEqual(['done']);
  });

  it('a handlers module that registers a misspelt event type stops the start with a suggestion, and lets go of the database', {
    timeout: 90_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-'));
    seedDefaultDataDir(dir);
    const env = { PAYHOOKS_WEBHOOK_SECRET: 'serve-secret', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '' };
    const result = await runCli(['serve', '--handlers', typoHandlers], env, dir, 80_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/"INVOICE_PAYED", which is not in the catalog: did you mean INVOICE_PAID\?/);
    expect((await runInProcess(['events', 'list', '--json'], {}, dir)).code).toBe(0);
  });

  it('on a port already in use, stops what it started and exits non-zero with the reason', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-'));
    seedDefaultDataDir(dir);
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const { port } = busy.address() as AddressInfo;
    try {
      const env = { PAYHOOKS_WEBHOOK_SECRET: 'serve-secret', PORT: String(port), HOST: '127.0.0.1', DATABASE_URL: '' };
      const result = await runCli(['serve', '--handlers', handlers], env, dir, 80_000);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(new RegExp(`Cannot listen on 127\\.0\\.0\\.1:${port}: the port is in use`));
      // It let go of the embedded database too: another command can open it at once.
      expect((await runInProcess(['events', 'list', '--json'], {}, dir)).code).toBe(0);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });

  it('--role receiver stores without running handlers; the events stay pending', { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-'));
    seedDefaultDataDir(dir);
    const env = {
      PAYHOOKS_WEBHOOK_SECRET: 'serve-secret',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: '',
      HANDLED_FILE: join(dir, 'handled.txt'),
    };
    const serve = spawnCli(['serve', '--role', 'receiver', '--handlers', handlers], env, dir);
    const done = collect(serve, 80_000);
    const url = String((await waitForLog(serve, /receiving webhooks/)).url);
    expect((await post(url, signedDelivery(scheme, exampleEvent('INVOICE_PAID', { eventId: 'evt_kept' })))).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1500));
    serve.kill('SIGTERM');
    expect((await done).code).toBe(0);
    const listed = JSON.parse((await runInProcess(['events', 'list', '--json'], {}, dir)).stdout) as { status: string }[];
    expect(listed.map((e) => e.status)).toEqual(['pending']);
  });

  it('with PAYHOOKS_API_KEY and PAYHOOKS_API_URL, handlers read current state through ctx.api (against the simulator)', {
    timeout: 90_000,
  }, async () => {
    const simulator = await startSimulator({ logger: pino({ level: 'silent' }) });
    try {
      const client = createClient({ apiKey: 'sk_test_serve', environment: simulator.url });
      const port = await freePort();
      const endpoint = await client.webhooks.create({
        url: `http://127.0.0.1:${port}/webhooks`,
        description: 'serve test',
        enabledEvents: ['INVOICE_PAID'],
      });
      const { secret } = await client.webhooks.getSecret(endpoint.id);

      const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-'));
      seedDefaultDataDir(dir);
      const handled = join(dir, 'handled.txt');
      const env = {
        PAYHOOKS_WEBHOOK_SECRET: secret,
        PAYHOOKS_API_KEY: 'sk_test_serve',
        PAYHOOKS_API_URL: simulator.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: '',
        HANDLED_FILE: handled,
      };
      const serve = spawnCli(['serve', '--handlers', apiHandlers], env, dir);
      const done = collect(serve, 80_000);
      await waitForLog(serve, /receiving webhooks/);

      const customer = await client.customers.create({ username: 'serve-ada' });
      const invoice = await client.invoices.create({
        customerId: customer.id,
        dueDate: '2026-12-01T06:00:00Z',
        items: [{ quantity: 2, concept: { displayName: 'Lunch', amount: 4_500, currency: 'MXN' } }],
      });
      const { payment } = await client.invoices.requestPayment(invoice.id, { paymentType: 'TRANSFER' });
      await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
      await waitFor(() => hasContent(handled), 'the handler to run');

      serve.kill('SIGTERM');
      const result = await done;
      expect(result.code).toBe(0);
      expect(readFileSync(handled, 'utf8')).toBe(`${invoice.id} isPaid=true\n`);
      expect(result.stdout).not.toMatch(/PAYHOOKS_API_KEY is not set/);
      expect(result.stdout + result.stderr).not.toContain('sk_test_serve');
      expect(result.stdout + result.stderr).not.toContain(secret);
    } finally {
      await simulator.close();
    }
  });
});
