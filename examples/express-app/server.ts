// An Express 5 app with its own JSON API (/orders) that also receives the Payment Collection Service's webhooks
// on one route, POST /webhooks, and marks an order paid when the service says its invoice is paid.
//
//   PAYHOOKS_WEBHOOK_SECRET=dev-secret npx tsx examples/express-app/server.ts
//
// README.md next to this file says how to send it a test event and what to change in a real app.

import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Generated } from 'kysely';
import { createPayhooks } from 'payhooks';

/** The app's table, created by migrations/001_orders.sql in the schema `shop`. */
interface ShopTables {
  orders: {
    invoice_id: string;
    description: string | null;
    status: Generated<'awaiting_payment' | 'paid'>;
    amount: number | null;
    currency: string | null;
    paid_at: Date | null;
    paid_by_event: string | null;
    created_at: Generated<Date>;
  };
}

const secret = process.env.PAYHOOKS_WEBHOOK_SECRET;
if (!secret?.trim()) {
  // Refused here rather than with a default: a made-up secret in production would reject every real delivery.
  console.error(
    'express-app: set PAYHOOKS_WEBHOOK_SECRET to the webhook endpoint signing secret, e.g.\n' +
      '  PAYHOOKS_WEBHOOK_SECRET=dev-secret npx tsx examples/express-app/server.ts',
  );
  process.exit(1);
}
const port = Number(process.env.PORT || 3000);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`express-app: PORT must be a number from 0 to 65535, not "${process.env.PORT}"`);
  process.exit(1);
}
// Loopback unless told otherwise: the service can only reach a public address, but a laptop should not expose one.
const host = process.env.HOST || '127.0.0.1';

const hooks = createPayhooks({
  secret,
  // `|| undefined`: a blank variable means unset, as it does for `payhooks serve`. Without DATABASE_URL the inbox
  // and the orders table live in the embedded database, under PAYHOOKS_DATA_DIR or ./.payhooks/pgdata, the folder
  // `npx payhooks events list` reads once this process has stopped.
  database: { url: process.env.DATABASE_URL || undefined, dataDir: process.env.PAYHOOKS_DATA_DIR || undefined },
  migrations: new URL('./migrations/', import.meta.url),
  appSchema: 'shop',
});

// INVOICE_PAID_OTHER is the same fact for an invoice marked paid outside the service (cash at the front desk).
hooks.on(
  ['INVOICE_PAID', 'INVOICE_PAID_OTHER'],
  async (event, ctx) => {
    const { invoiceId, invoice, payment } = event.data;
    const paid = {
      status: 'paid' as const,
      amount: invoice.amount,
      currency: invoice.currency,
      // receivedAt rather than now: a retry of this handler must write the same values as the first attempt.
      paid_at: payment?.paymentTime ? new Date(payment.paymentTime) : ctx.receivedAt,
      paid_by_event: event.eventId,
    };
    // In the transaction that records this handler done: the order and the completion mark commit together, so a
    // retry after a crash cannot mark it twice, and a failed write leaves the event to be retried.
    await ctx.transaction<ShopTables>(async (trx) => {
      await trx
        .insertInto('orders')
        .values({ invoice_id: invoiceId, ...paid })
        // The first payment wins: a later INVOICE_PAID_OTHER (or a replay) for the same invoice keeps its record.
        .onConflict((conflict) => conflict.column('invoice_id').doUpdateSet(paid).where('orders.status', '<>', 'paid'))
        .execute();
    });
    ctx.logger.info({ invoiceId }, 'order marked paid');
  },
  // Completion is recorded under this name: a fixed one survives renaming the function or adding a type.
  { name: 'mark-order-paid' },
);

const db = await hooks.appDb<ShopTables>();
const app = express();

// Before express.json(): the signature covers the exact bytes of the body, and the JSON parser would consume them.
// Mounted after it, payhooks answers 500 with a message saying so (the sender retries, so nothing is lost).
app.post('/webhooks', hooks.express());
app.use(express.json());

app.post('/orders', async (req: Request, res: Response) => {
  const { invoiceId, description } = (req.body ?? {}) as { invoiceId?: unknown; description?: unknown };
  if (typeof invoiceId !== 'string' || !invoiceId || (description !== undefined && typeof description !== 'string')) {
    res.status(400).json({ error: { message: 'Send {"invoiceId": "inv_…", "description": "…"} as JSON.' } });
    return;
  }
  const order = await db
    .insertInto('orders')
    .values({ invoice_id: invoiceId, description: description ?? null })
    // The webhook may have come first and created the row as paid: keep its status, add what the app knows.
    .onConflict((conflict) => conflict.column('invoice_id').doUpdateSet({ description: description ?? null }))
    .returningAll()
    .executeTakeFirstOrThrow();
  res.status(201).json(order);
});

app.get('/orders', async (_req: Request, res: Response) => {
  res.json(await db.selectFrom('orders').selectAll().orderBy('created_at', 'desc').limit(100).execute());
});

app.get('/orders/:invoiceId', async (req: Request<{ invoiceId: string }>, res: Response) => {
  const order = await db.selectFrom('orders').selectAll().where('invoice_id', '=', req.params.invoiceId).executeTakeFirst();
  if (!order) {
    res.status(404).json({ error: { message: `No order for invoice ${req.params.invoiceId}.` } });
    return;
  }
  res.json(order);
});

// Express 5 passes rejected promises of async routes here; without it they would answer an HTML error page.
app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
  // express.json() rejects a malformed or oversized body with a 4xx `status` and a message meant for the client
  // (`expose`): the client's mistake, not a failure of the app.
  const { status, expose, message } = (err ?? {}) as { status?: unknown; expose?: unknown; message?: unknown };
  if (typeof status === 'number' && status >= 400 && status < 500) {
    res.status(status).json({ error: { message: expose === true && typeof message === 'string' ? message : 'Bad request.' } });
    return;
  }
  hooks.logger.error({ err }, 'request failed');
  res.status(500).json({ error: { message: 'Internal error.' } });
});

// The worker runs handlers in this process, as events arrive; it opens and migrates the database first.
await hooks.start();
const server = app.listen(port, host, (err?: Error) => {
  // Express 5 calls back with the error when listening fails (the port is taken, say).
  if (err) {
    hooks.logger.error({ err }, `express-app could not listen on ${host}:${port}`);
    void hooks.stop().finally(() => process.exit(1));
    return;
  }
  const { port: actual } = server.address() as AddressInfo;
  const url = `http://${host}:${actual}`;
  hooks.logger.info({ url, webhooks: `${url}/webhooks` }, `express-app listening on ${url}`);
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
