import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { runCli } from '../helpers/cli.js';
import { type ExampleProcess, repoRoot, startExample, stopExample, waitForOutput } from '../helpers/examples.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'express-app-test-secret';

interface Order {
  invoice_id: string;
  description: string | null;
  status: string;
  amount: number | null;
  currency: string | null;
  paid_at: string | null;
  paid_by_event: string | null;
}

let example: ExampleProcess;
let dataDir: string;
let url: string;

/** A signed INVOICE_PAID for `invoiceId`, its invoice consistent with it, as the service would send it. */
function invoicePaid(invoiceId: string, amount: number) {
  const { invoice } = exampleEvent('INVOICE_PAID').data;
  return exampleEvent('INVOICE_PAID', { data: { invoiceId, amount, invoice: { ...invoice, id: invoiceId, amount } } });
}

async function orderOf(invoiceId: string): Promise<{ status: number; body: Order }> {
  const response = await fetch(`${url}/orders/${invoiceId}`);
  return { status: response.status, body: (await response.json()) as Order };
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'payhooks-express-app-'));
  // PORT=0 picks a free port; the listening line says which.
  example = startExample('express-app/server.ts', [], {
    env: { PORT: '0', HOST: '127.0.0.1', PAYHOOKS_WEBHOOK_SECRET: SECRET, PAYHOOKS_DATA_DIR: join(dataDir, 'pgdata') },
  });
  url = await waitForOutput(example, /express-app listening on (http:\/\/127\.0\.0\.1:\d+)/, 'the listening line of examples/express-app');
}, 40_000);

afterAll(async () => {
  if (example?.running()) example.child.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('examples/express-app, run as its README says', () => {
  const paid = invoicePaid('inv_exapp_1', 1_999);

  it("serves the app's own routes with express.json(), next to the webhook route", async () => {
    const created = await fetch(`${url}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoiceId: 'inv_exapp_1', description: 'Tuition, November' }),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ invoice_id: 'inv_exapp_1', description: 'Tuition, November', status: 'awaiting_payment' });

    expect(await orderOf('inv_exapp_1')).toMatchObject({ status: 200, body: { status: 'awaiting_payment', paid_at: null } });
    expect((await orderOf('inv_nobody')).status).toBe(404);

    const malformed = await fetch(`${url}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"invoiceId":',
    });
    expect(malformed.status).toBe(400);
    const missing = await fetch(`${url}/orders`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(missing.status).toBe(400);
  });

  it('a signed INVOICE_PAID to POST /webhooks marks the order paid; the same delivery again is a duplicate', async () => {
    const response = await fetch(`${url}/webhooks`, signedRequest(paid, { secret: SECRET }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ received: true });

    await waitFor(async () => (await orderOf('inv_exapp_1')).body.status === 'paid', 'the order marked paid', 15_000);
    const { body: order } = await orderOf('inv_exapp_1');
    expect(order).toMatchObject({
      invoice_id: 'inv_exapp_1',
      description: 'Tuition, November',
      status: 'paid',
      amount: 1_999,
      currency: 'MXN',
      paid_at: paid.data.payment!.paymentTime,
      paid_by_event: paid.eventId,
    });

    const again = await fetch(`${url}/webhooks`, signedRequest(paid, { secret: SECRET }));
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect((await orderOf('inv_exapp_1')).body).toEqual(order);
  });

  it("a payment that arrives before the app's own order is kept when the order is created", async () => {
    const early = invoicePaid('inv_exapp_early', 500);
    expect((await fetch(`${url}/webhooks`, signedRequest(early, { secret: SECRET }))).status).toBe(200);
    await waitFor(async () => (await orderOf('inv_exapp_early')).body.status === 'paid', 'the early order marked paid', 15_000);

    const created = await fetch(`${url}/orders`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ invoiceId: 'inv_exapp_early', description: 'Bus, November' }),
    });
    expect(created.status).toBe(201);
    expect(await created.json()).toMatchObject({ description: 'Bus, November', status: 'paid', amount: 500, paid_by_event: early.eventId });
  });

  it('refuses a delivery signed with another secret (401) and stores nothing of it', async () => {
    const forged = invoicePaid('inv_exapp_forged', 100);
    const response = await fetch(`${url}/webhooks`, signedRequest(forged, { secret: 'not-the-endpoint-secret' }));
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: { message: 'Invalid webhook signature.' } });

    const unsigned = await fetch(`${url}/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(forged),
    });
    expect(unsigned.status).toBe(401);
    expect((await orderOf('inv_exapp_forged')).status).toBe(404);
  });

  it('stops on SIGTERM with exit code 0, leaving the embedded database to `payhooks events list`', { timeout: 60_000 }, async () => {
    expect(await stopExample(example), example.output()).toBe(0);
    expect(example.output()).toContain('"msg":"stopped"');

    // The same folder, opened by another process: only possible once the example released it.
    const listed = await runCli(['events', 'list'], { PAYHOOKS_DATA_DIR: join(dataDir, 'pgdata'), DATABASE_URL: '' }, repoRoot, 45_000);
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    const rows = listed.stdout
      .split('\n')
      .filter((line) => line.startsWith('evt_'))
      .map((line) => line.split(/\s+/).slice(0, 5));
    expect(rows).toHaveLength(2); // the forged delivery was never stored
    expect(rows).toContainEqual([paid.eventId, 'INVOICE_PAID', 'done', '1', '2']);
    expect(rows.map(([, , status]) => status)).toEqual(['done', 'done']);
  });
});
