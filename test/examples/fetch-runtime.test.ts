import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { type ExampleProcess, startExample, stopExample, waitForOutput } from '../helpers/examples.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'fetch-runtime-test-secret';

let example: ExampleProcess;
let dataDir: string;
let url: string;

/** A signed INVOICE_PAID for `invoiceId`, its invoice consistent with it, as the service would send it. */
function invoicePaid(invoiceId: string, amount: number) {
  const { invoice } = exampleEvent('INVOICE_PAID').data;
  return exampleEvent('INVOICE_PAID', { data: { invoiceId, amount, invoice: { ...invoice, id: invoiceId, amount } } });
}

async function getJson(path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${url}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'payhooks-fetch-runtime-'));
  // PORT=0 picks a free port; the listening line says which.
  example = startExample('fetch-runtime/server.ts', [], {
    env: { PORT: '0', HOST: '127.0.0.1', PAYHOOKS_WEBHOOK_SECRET: SECRET, PAYHOOKS_DATA_DIR: join(dataDir, 'pgdata') },
  });
  url = await waitForOutput(
    example,
    /fetch-runtime listening on (http:\/\/127\.0\.0\.1:\d+)/,
    'the listening line of examples/fetch-runtime',
  );
}, 40_000);

afterAll(async () => {
  if (example?.running()) example.child.kill('SIGKILL');
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe('examples/fetch-runtime (Hono on @hono/node-server), run as its README says', () => {
  const paid = invoicePaid('inv_fetchrt_1', 4_250);

  it("serves the app's own routes", async () => {
    const home = await fetch(`${url}/`);
    expect(home.status).toBe(200);
    expect(await home.text()).toContain('POST /webhooks');
    expect(await getJson('/invoices/inv_fetchrt_1')).toEqual({ status: 404, body: { invoiceId: 'inv_fetchrt_1', paid: false } });
    expect((await getJson('/events/evt_unknown')).status).toBe(404);
  });

  it('a signed INVOICE_PAID to POST /webhooks is stored, handled once, and shown by the app', async () => {
    const response = await fetch(`${url}/webhooks`, signedRequest(paid, { secret: SECRET }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ received: true });

    await waitFor(async () => (await getJson('/invoices/inv_fetchrt_1')).status === 200, 'the invoice recorded paid', 15_000);
    expect((await getJson('/invoices/inv_fetchrt_1')).body).toEqual({
      invoiceId: 'inv_fetchrt_1',
      amount: 4_250,
      currency: 'MXN',
      paidAt: paid.data.payment!.paymentTime,
      eventId: paid.eventId,
      paid: true,
    });
    // The in-memory record is made inside the handler and the event marked done after it returns: the state may trail it.
    await waitFor(async () => (await getJson(`/events/${paid.eventId}`)).body.status === 'done', 'the event done', 15_000);
    expect((await getJson(`/events/${paid.eventId}`)).body).toMatchObject({
      eventType: 'INVOICE_PAID',
      status: 'done',
      attempts: 1,
      deliveries: 1,
      completedHandlers: ['record-paid-invoice'],
    });

    const again = await fetch(`${url}/webhooks`, signedRequest(paid, { secret: SECRET }));
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect((await getJson(`/events/${paid.eventId}`)).body).toMatchObject({ status: 'done', attempts: 1, deliveries: 2 });
  });

  it('refuses a delivery signed with another secret (401) and stores nothing of it', async () => {
    const forged = invoicePaid('inv_fetchrt_forged', 100);
    const response = await fetch(`${url}/webhooks`, signedRequest(forged, { secret: 'not-the-endpoint-secret' }));
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ error: { message: 'Invalid webhook signature.' } });

    const unsigned = await fetch(`${url}/webhooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(forged),
    });
    expect(unsigned.status).toBe(401);
    expect((await getJson(`/events/${forged.eventId}`)).status).toBe(404);
    expect((await getJson('/invoices/inv_fetchrt_forged')).status).toBe(404);
  });

  it('stops on SIGTERM with exit code 0', async () => {
    expect(await stopExample(example), example.output()).toBe(0);
    expect(example.output()).toContain('"msg":"stopped"');
  });
});
