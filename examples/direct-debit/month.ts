// One month of a gym membership paid by direct debit, against the local simulator: a customer saves a card, a
// subscription issues its monthly invoice, the collection is declined twice (the dunning hook decides each
// retry), then succeeds; part of it is refunded and the customer disputes the charge. The direct-debit handler
// templates record each step in their tables, which are printed at the end (`--json`: a summary for machines).
//
//   npx tsx examples/direct-debit/month.ts [--json]
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import {
  type DirectDebitTables,
  dunningDecision,
  expectCharge,
  type PaymentFailure,
  registerDirectDebit,
} from 'payhooks/handlers/direct-debit';
import { createLogger, createPayhooks, type EventType, getEvent } from 'payhooks';
import { createClient } from 'payhooks/client';
import { createSandboxClient, startSimulator } from 'payhooks/simulator';

const { values: flags } = parseArgs({ options: { json: { type: 'boolean', default: false } } });
// With --json, stdout carries nothing but the summary, so the narration moves to stderr.
const say = (line = '') => (flags.json ? process.stderr : process.stdout).write(`${line}\n`);

/** The types the templates handle: the endpoint subscribes to these and nothing else, so no event ends `ignored`. */
const HANDLED: EventType[] = [
  'PAYMENT_METHOD_CREATED',
  'CUSTOMER_ARCHIVED',
  'INVOICE_PAID',
  'PAYMENT_COMPLETED',
  'PAYMENT_ATTEMPT_FAILED',
  'SUBSCRIPTION_CREATED',
  'SUBSCRIPTION_UPDATED',
  'SUBSCRIPTION_CANCELED',
  'DISPUTE_CREATED',
  'DISPUTE_RESPONSE_CREATED',
  'DISPUTE_RESOLVED',
  'PAYMENT_REFUNDED',
];
const SCHEMA = 'direct_debit';
const MEMBERSHIP = { displayName: 'Gym membership', amount: 49_900, currency: 'MXN' };

interface DunningCall {
  attemptId: string;
  attemptNumber: number;
  failuresSoFar: number;
  failedAt: string;
  decision: { action: 'retry'; retryAt: string } | { action: 'suspend' };
}

// Every delivery is POSTed twice: the tables below still show one mandate, one collection and one dunning call
// per failed attempt, which is the point of recording each effect in the transaction that marks it done.
const simulator = await startSimulator({ duplicateRate: 1, random: 42 });
const receiver = createServer();
await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/webhooks`;

const apiKey = 'sk_test_direct_debit_month';
const api = createClient({ apiKey, environment: simulator.url });
const sandbox = createSandboxClient({ baseUrl: simulator.url, apiKey });
const endpoint = await api.webhooks.create({ url: receiverUrl, description: 'direct-debit example', enabledEvents: HANDLED });
const { secret } = await api.webhooks.getSecret(endpoint.id);

// memory:// leaves nothing behind after the demo; DATABASE_URL keeps the month in a real server's tables.
const databaseUrl = process.env.DATABASE_URL || undefined;
const hooks = createPayhooks({
  secret,
  api,
  database: databaseUrl ? { url: databaseUrl } : { dataDir: 'memory://' },
  // Warnings and errors only, on stderr: the narration is the output here.
  logger: createLogger({ level: process.env.PAYHOOKS_LOG_LEVEL || 'warn' }, process.stderr),
  worker: { pollIntervalMs: 100 },
});

const dunningCalls: DunningCall[] = [];
await registerDirectDebit(hooks, {
  schema: SCHEMA,
  // Runs once per failed attempt, inside the transaction that records it. A real app would schedule the retry
  // (or suspend the membership) here, keyed by failure.attemptId; this one keeps the decision to act on below.
  dunning: (failure: PaymentFailure) => {
    const decision = dunningDecision(failure);
    dunningCalls.push({
      attemptId: failure.attemptId,
      attemptNumber: failure.attemptNumber,
      failuresSoFar: failure.failuresSoFar,
      failedAt: failure.failedAt.toISOString(),
      decision: decision.action === 'retry' ? { action: 'retry', retryAt: decision.retryAt.toISOString() } : decision,
    });
  },
});
const store = await hooks.ready();
const db = (await hooks.appDb<DirectDebitTables>()).withSchema(SCHEMA);
const handle = hooks.node();
receiver.on('request', (req, res) => {
  if (req.method === 'POST' && req.url === '/webhooks') void handle(req, res);
  else res.writeHead(404).end();
});
await hooks.start();

/** Waits until the simulator has delivered everything so far and each delivered event is processed. */
async function settle(): Promise<void> {
  await simulator.idle();
  const pending = new Set(simulator.events().flatMap((event) => (HANDLED.includes(event.eventType as EventType) ? [event.eventId] : [])));
  const deadline = Date.now() + 30_000;
  while (pending.size > 0) {
    for (const eventId of pending) {
      const stored = await getEvent(store, eventId);
      if (stored?.status === 'done') pending.delete(eventId);
      else if (stored?.status === 'dead' || stored?.status === 'invalid')
        throw new Error(`event ${stored.eventType} ${eventId} is ${stored.status}: ${stored.lastError}`);
    }
    if (pending.size === 0) break;
    if (Date.now() > deadline) throw new Error(`events not processed within 30 s: ${[...pending].join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const money = (amount: string | number | null, currency: string | null) =>
  amount === null ? '' : `${(Number(amount) / 100).toFixed(2)} ${currency ?? ''}`.trim();
const day = (value: Date | string | null) => (value ? new Date(value).toISOString().slice(0, 10) : '');
const minute = (value: Date | string | null) => (value ? new Date(value).toISOString().slice(0, 16).replace('T', ' ') : '');

let stepNumber = 0;
/** Prints one step of the month, waits until payhooks has processed what it caused, then prints what was recorded. */
async function step(title: string, caused: string, recorded: () => Promise<string>): Promise<void> {
  stepNumber++;
  say(`${String(stepNumber).padStart(2)}. ${title}`);
  say(`      ${caused}`);
  await settle();
  say(`      → ${await recorded()}`);
}

const started = Date.now();
say(`A month of direct debit against the simulator at ${simulator.url}`);
say(`payhooks receives at ${receiverUrl} (${databaseUrl ? 'PostgreSQL from DATABASE_URL' : 'embedded database, in memory'});`);
say('the simulator POSTs every delivery twice.');
say();

const run = randomBytes(3).toString('hex');
const customer = await api.customers.create({ username: `ana-${run}`, name: 'Ana López', email: `ana-${run}@example.com` });
say(`Customer ${customer.id} (Ana López) signs up for the gym.`);

const card = await sandbox.savePaymentMethod(customer.id, {
  type: 'CARD',
  brand: 'VISA',
  last4: '4242',
  expiryMonth: 9,
  expiryYear: 2030,
  cardholder: 'Ana López',
  chargesConsented: true,
});
await step(
  'Ana saves a card for direct debit and consents to the monthly charge',
  `payment method ${card.id} (PAYMENT_METHOD_CREATED)`,
  async () => {
    const mandate = await db.selectFrom('mandates').selectAll().where('payment_method_id', '=', card.id).executeTakeFirstOrThrow();
    return `mandate ${mandate.status}: ${mandate.card_brand} ···${mandate.card_last4}, expires ${String(mandate.card_expiry_month).padStart(2, '0')}/${mandate.card_expiry_year}, charges consented: ${mandate.charges_consented}`;
  },
);

const subscription = await sandbox.createSubscription({
  customerId: customer.id,
  description: 'Gym membership, monthly',
  items: [{ quantity: 1, concept: MEMBERSHIP }],
});
await step('She subscribes: 499.00 MXN a month', `subscription ${subscription.id} (SUBSCRIPTION_CREATED)`, async () => {
  const row = await db.selectFrom('subscriptions').selectAll().where('id', '=', subscription.id).executeTakeFirstOrThrow();
  return `subscription ${row.status}, next collection ${day(row.next_collection_at)}`;
});

const { invoice } = await sandbox.cycleSubscription(subscription.id);
// What the app issued, to be compared with what arrives: a different amount, currency or items is flagged, never paid.
await expectCharge(db, {
  invoiceId: invoice.id,
  customerId: customer.id,
  amount: MEMBERSHIP.amount,
  currency: MEMBERSHIP.currency,
  items: invoice.items.map(({ description, quantity, amount }) => ({ description, quantity, amount })),
});
await step(
  "The month's cycle issues the invoice; the app records the charge it expects (expectCharge)",
  `invoice ${invoice.id}, ${money(invoice.amount, invoice.currency)} (INVOICE_CREATED, SUBSCRIPTION_UPDATED)`,
  async () => {
    const charge = await db.selectFrom('charges').selectAll().where('invoice_id', '=', invoice.id).executeTakeFirstOrThrow();
    const row = await db.selectFrom('subscriptions').selectAll().where('id', '=', subscription.id).executeTakeFirstOrThrow();
    return `charge ${charge.status}: ${money(charge.expected_amount, charge.expected_currency)}; subscription's next collection ${day(row.next_collection_at)}`;
  },
);

// The simulator has no call that debits a saved card: a pending payment whose attempts the sandbox settles
// stands in for the service collecting against the mandate.
const { payment } = await api.invoices.requestPayment(invoice.id, { paymentType: 'TRANSFER' });

/** The dunning hook's call for an attempt, once the step that caused it has settled. */
const dunningFor = (attemptNumber: number) => {
  const calls = dunningCalls.filter((call) => call.attemptNumber === attemptNumber);
  if (calls.length !== 1) throw new Error(`the dunning hook ran ${calls.length} times for attempt ${attemptNumber}`);
  return calls[0]!;
};
const decided = (call: DunningCall) =>
  call.decision.action === 'retry' ? `retry on ${day(call.decision.retryAt)}` : 'suspend the membership';

for (const attemptNumber of [1, 2]) {
  await sandbox.failPayment(payment.id);
  await step(
    attemptNumber === 1
      ? `The service collects ${money(payment.amount, payment.currency)}: attempt 1 is declined`
      : 'On the day dunning chose (here: at once), the retry: attempt 2 is declined too',
    `payment ${payment.id} still pending (PAYMENT_ATTEMPT_FAILED)`,
    async () => {
      const failure = await db
        .selectFrom('payment_failures')
        .selectAll()
        .where('payment_id', '=', payment.id)
        .where('attempt_number', '=', attemptNumber)
        .executeTakeFirstOrThrow();
      const call = dunningFor(attemptNumber);
      return `failure recorded (${failure.error_type} ${failure.error_code}, attempt ${failure.attempt_number}); dunningDecision after ${call.failuresSoFar} failure(s): ${decided(call)}`;
    },
  );
}

await api.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
await step(
  'The second retry goes through: attempt 3 succeeds',
  `invoice ${invoice.id} paid (PAYMENT_ATTEMPT_SUCCEEDED, INVOICE_PAID, PAYMENT_COMPLETED)`,
  async () => {
    const charge = await db.selectFrom('charges').selectAll().where('invoice_id', '=', invoice.id).executeTakeFirstOrThrow();
    return `charge ${charge.status}: ${money(charge.paid_amount, charge.paid_currency)} by ${charge.payment_id}, recorded once, by ${charge.collected_by_event}`;
  },
);

const { refund } = await sandbox.refundPayment(payment.id, { amount: 10_000, reason: 'pool closed for a week' });
await step('The pool was closed for a week: the gym refunds 100.00 MXN', `refund ${refund.id} (PAYMENT_REFUNDED)`, async () => {
  const charge = await db.selectFrom('charges').selectAll().where('invoice_id', '=', invoice.id).executeTakeFirstOrThrow();
  return `refund recorded; the charge shows ${money(charge.refunded_amount, charge.paid_currency)} refunded`;
});

const dispute = await sandbox.openDispute(payment.id, { reason: 'NOT_RECOGNIZED' });
await step('Ana does not recognise the charge and disputes it with her bank', `dispute ${dispute.id} (DISPUTE_CREATED)`, async () => {
  const row = await db.selectFrom('disputes').selectAll().where('id', '=', dispute.id).executeTakeFirstOrThrow();
  const charge = await db.selectFrom('charges').selectAll().where('invoice_id', '=', invoice.id).executeTakeFirstOrThrow();
  return `dispute ${row.status}, evidence due by ${minute(row.respond_by)} UTC; charge disputed: ${charge.disputed}`;
});

await sandbox.respondToDispute(dispute.id, { evidence: 'signed membership contract and check-in log' });
await step('The gym answers with the signed membership contract', 'response sent (DISPUTE_RESPONSE_CREATED)', async () => {
  const row = await db.selectFrom('disputes').selectAll().where('id', '=', dispute.id).executeTakeFirstOrThrow();
  return `dispute ${row.status}, answered ${minute(row.responded_at)} UTC`;
});

// Only this run's rows: on a shared PostgreSQL database earlier runs' months are there too.
const tables = {
  mandates: await db.selectFrom('mandates').selectAll().where('customer_id', '=', customer.id).execute(),
  charges: await db.selectFrom('charges').selectAll().where('customer_id', '=', customer.id).execute(),
  paymentFailures: await db
    .selectFrom('payment_failures')
    .selectAll()
    .where('customer_id', '=', customer.id)
    .orderBy('attempt_number')
    .execute(),
  subscriptions: await db.selectFrom('subscriptions').selectAll().where('customer_id', '=', customer.id).execute(),
  disputes: await db.selectFrom('disputes').selectAll().where('payment_id', '=', payment.id).execute(),
  refunds: await db.selectFrom('refunds').selectAll().where('payment_id', '=', payment.id).execute(),
};
const delivered = simulator.events().filter((event) => HANDLED.includes(event.eventType as EventType));
const posts = simulator.deliveryPosts();

await hooks.stop();
await new Promise<void>((resolve) => {
  receiver.closeAllConnections();
  receiver.close(() => resolve());
});
await simulator.close();

if (flags.json) {
  // Dates as ISO strings and bigint columns (strings from pg) as numbers, so the summary reads the same on either database.
  const plain = (rows: object[]) =>
    rows.map((row) =>
      Object.fromEntries(
        Object.entries(row).map(([key, value]) => [
          key,
          value instanceof Date ? value.toISOString() : typeof value === 'string' && /amount$/.test(key) ? Number(value) : value,
        ]),
      ),
    );
  const summary = {
    simulator: simulator.url,
    database: databaseUrl ? 'postgres' : 'pglite',
    ids: {
      customer: customer.id,
      paymentMethod: card.id,
      subscription: subscription.id,
      invoice: invoice.id,
      payment: payment.id,
      dispute: dispute.id,
    },
    // What the service said, to compare the tables with.
    service: { disputeRespondBy: dispute.respondBy },
    events: {
      delivered: delivered.length,
      posts: posts.length,
      duplicates: posts.filter((post) => post.duplicate).length,
      types: delivered.map((event) => event.eventType),
    },
    dunningCalls,
    tables: Object.fromEntries(Object.entries(tables).map(([name, rows]) => [name, plain(rows)])),
    ms: Date.now() - started,
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} else {
  say();
  say(`The templates' tables (schema ${SCHEMA}), for customer ${customer.id}:`);
  printTable(
    'mandates',
    tables.mandates.map((m) => ({
      payment_method: m.payment_method_id,
      type: m.type,
      card: `${m.card_brand} ···${m.card_last4}`,
      expires: `${String(m.card_expiry_month).padStart(2, '0')}/${m.card_expiry_year}`,
      consented: m.charges_consented,
      status: m.status,
    })),
  );
  printTable(
    'charges',
    tables.charges.map((c) => ({
      invoice: c.invoice_id,
      status: c.status,
      expected: money(c.expected_amount, c.expected_currency),
      paid: money(c.paid_amount, c.paid_currency),
      payment: c.payment_id,
      refunded: money(c.refunded_amount, c.paid_currency),
      disputed: c.disputed,
    })),
  );
  printTable(
    'payment_failures',
    tables.paymentFailures.map((f) => ({
      attempt: f.attempt_number,
      attempt_id: f.attempt_id,
      error: `${f.error_type} ${f.error_code}`,
      amount: money(f.amount, f.currency),
      failed_at: minute(f.failed_at),
      dunning_called: f.dunning_called,
    })),
  );
  printTable(
    'subscriptions',
    tables.subscriptions.map((s) => ({
      subscription: s.id,
      status: s.status,
      active: s.is_active,
      canceled: s.canceled,
      last_collection: day(s.last_collection_at),
      next_collection: day(s.next_collection_at),
    })),
  );
  printTable(
    'disputes',
    tables.disputes.map((d) => ({
      dispute: d.id,
      payment: d.payment_id,
      status: d.status,
      reason: d.reason,
      respond_by: minute(d.respond_by),
      responded_at: minute(d.responded_at),
    })),
  );
  printTable(
    'refunds',
    tables.refunds.map((r) => ({ refund: r.id, amount: money(r.amount, r.currency), status: r.status, reason: r.reason })),
  );
  say();
  say(`The dunning hook ran ${dunningCalls.length} times for ${tables.paymentFailures.length} failed attempts.`);
  say(
    `${delivered.length} events delivered as ${posts.length} POSTs (${posts.filter((post) => post.duplicate).length} duplicates), each processed once, in ${((Date.now() - started) / 1000).toFixed(1)} s.`,
  );
}

/** Prints rows as an aligned table under a title. */
function printTable(title: string, rows: Record<string, string | number | boolean | null>[]): void {
  say();
  say(`  ${title}`);
  if (rows.length === 0) {
    say('    (no rows)');
    return;
  }
  const columns = Object.keys(rows[0]!);
  const cell = (value: string | number | boolean | null | undefined) => (value === null || value === undefined ? '' : String(value));
  const widths = columns.map((column) => Math.max(column.length, ...rows.map((row) => cell(row[column]).length)));
  const line = (values: string[]) => `    ${values.map((value, i) => value.padEnd(widths[i]!)).join('  ')}`.trimEnd();
  say(line(columns));
  say(line(widths.map((width) => '─'.repeat(width))));
  for (const row of rows) say(line(columns.map((column) => cell(row[column]))));
}
