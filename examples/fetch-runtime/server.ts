// A Hono app that receives the Payment Collection Service's webhooks through payhooks' Fetch-API handler
// (`hooks.fetch()`: a Request in, a Response out), served on Node by @hono/node-server.
//
//   PAYHOOKS_WEBHOOK_SECRET=dev-secret npx tsx examples/fetch-runtime/server.ts
//
// README.md next to this file says how to send it a test event and what to change in a real app.

import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { createPayhooks, getEvent } from 'payhooks';

const secret = process.env.PAYHOOKS_WEBHOOK_SECRET;
if (!secret?.trim()) {
  // Refused here rather than with a default: a made-up secret in production would reject every real delivery.
  console.error(
    'fetch-runtime: set PAYHOOKS_WEBHOOK_SECRET to the webhook endpoint signing secret, e.g.\n' +
      '  PAYHOOKS_WEBHOOK_SECRET=dev-secret npx tsx examples/fetch-runtime/server.ts',
  );
  process.exit(1);
}
const port = Number(process.env.PORT || 3000);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`fetch-runtime: PORT must be a number from 0 to 65535, not "${process.env.PORT}"`);
  process.exit(1);
}
// Loopback unless told otherwise: the service can only reach a public address, but a laptop should not expose one.
const hostname = process.env.HOST || '127.0.0.1';

const hooks = createPayhooks({
  secret,
  // `|| undefined`: a blank variable means unset, as it does for `payhooks serve`. Without DATABASE_URL the inbox
  // lives in the embedded database, under PAYHOOKS_DATA_DIR or ./.payhooks/pgdata.
  database: { url: process.env.DATABASE_URL || undefined, dataDir: process.env.PAYHOOKS_DATA_DIR || undefined },
});

interface PaidInvoice {
  invoiceId: string;
  amount: number;
  currency: string;
  paidAt: string | null;
  eventId: string;
}

// In memory to keep the example short, and so lost on restart while the inbox, which remembers these events as
// done, is not: state that must last belongs in a table written inside ctx.transaction (see examples/express-app).
const paidInvoices = new Map<string, PaidInvoice>();

hooks.on(
  ['INVOICE_PAID', 'INVOICE_PAID_OTHER'],
  async (event, ctx) => {
    const { invoiceId, invoice, payment } = event.data;
    // The first payment wins, so a duplicate or a replay leaves the record as it was.
    if (paidInvoices.has(invoiceId)) return;
    paidInvoices.set(invoiceId, {
      invoiceId,
      amount: invoice.amount,
      currency: invoice.currency,
      paidAt: payment?.paymentTime ?? null,
      eventId: event.eventId,
    });
    ctx.logger.info({ invoiceId }, 'invoice paid');
  },
  // Completion is recorded under this name: a fixed one survives renaming the function or adding a type.
  { name: 'record-paid-invoice' },
);

// Made once, not per request: it holds the body limits and the receiver shared by concurrent deliveries.
const receiveWebhook = hooks.fetch();

const app = new Hono();

// c.req.raw is the untouched Request: payhooks reads its body itself, as bytes, which the signature covers. No
// middleware on this route may read the body first (c.req.json(), a validator).
app.post('/webhooks', (c) => receiveWebhook(c.req.raw));

app.get('/', (c) => c.text('fetch-runtime: POST /webhooks, GET /invoices/:invoiceId, GET /events/:eventId\n'));

app.get('/invoices/:invoiceId', (c) => {
  const invoiceId = c.req.param('invoiceId');
  const paid = paidInvoices.get(invoiceId);
  return paid ? c.json({ ...paid, paid: true }) : c.json({ invoiceId, paid: false }, 404);
});

// What the inbox holds for a delivery: its state (pending, done, dead…), attempts and how often it arrived.
app.get('/events/:eventId', async (c) => {
  const stored = await getEvent(await hooks.ready(), c.req.param('eventId'));
  if (!stored) return c.json({ error: { message: 'No such event in the inbox.' } }, 404);
  const { eventId, eventType, status, attempts, deliveries, lastError, receivedAt, processedAt, completedHandlers } = stored;
  return c.json({ eventId, eventType, status, attempts, deliveries, lastError, receivedAt, processedAt, completedHandlers });
});

app.onError((err, c) => {
  hooks.logger.error({ err }, 'request failed');
  return c.json({ error: { message: 'Internal error.' } }, 500);
});

// The worker runs handlers in this process, as events arrive; it opens and migrates the database first.
await hooks.start();
const server = serve({ fetch: app.fetch, port, hostname }, (info) => {
  const url = `http://${hostname}:${info.port}`;
  hooks.logger.info({ url, webhooks: `${url}/webhooks` }, `fetch-runtime listening on ${url}`);
});
server.once('error', (err) => {
  hooks.logger.error({ err }, `fetch-runtime could not listen on ${hostname}:${port}`);
  void hooks.stop().finally(() => process.exit(1));
});

// Once only: a second Ctrl-C falls through to Node's default and ends the process at once.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    hooks.logger.info({ signal }, 'shutting down');
    // No new requests first, so that nothing is acknowledged after the inbox is closed; then the worker lets
    // running handlers finish and the embedded database is released for the next process.
    server.close(() => {
      hooks.stop().then(
        () => hooks.logger.info('stopped'),
        (err: unknown) => {
          hooks.logger.error({ err }, 'shutdown failed');
          process.exitCode = 1;
        },
      );
    });
  });
}
