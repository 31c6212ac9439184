import { randomBytes } from 'node:crypto';
import { createClient, type ApiClient } from '../client/index.js';
import { ApiInputError } from '../client/errors.js';
import type { ApiCustomer, ApiInvoice } from '../events/rest-contract.js';
import type { EventType } from '../events/index.js';
import { PayhooksError } from '../errors.js';
import { type FlowOverrides, type OverridableResource, type ResolvedOverrides, resolveOverrides } from './flow-overrides.js';
import { createSandboxClient, type SandboxClient } from './sandbox-client.js';

/** The flows `payhooks trigger` runs, in the order `--help` lists them. */
export const FLOW_NAMES = [
  'cash-payment',
  'transfer-payment',
  'mark-paid',
  'failed-attempt',
  'refund',
  'dispute',
  'subscription-cycle',
  'direct-debit',
] as const;

/** The name of a flow. */
export type FlowName = (typeof FLOW_NAMES)[number];

/** What a flow is for and the events it causes, in the order the simulator emits them. */
export interface FlowDescription {
  name: FlowName;
  /** One line for `--help`. */
  summary: string;
  events: readonly EventType[];
  /** The resources it creates, whose fields `overrides` may set (`overridePaths` lists the paths). */
  creates: readonly OverridableResource[];
}

/** One call a flow made and what came of it. */
export interface FlowStep {
  /** e.g. `POST /v1/invoices`. */
  call: string;
  /** e.g. `invoice inv_… 250000 MXN, unpaid`. */
  result: string;
}

/** An event the flow caused, as the simulator emitted it. */
export interface FlowEvent {
  eventId: string;
  eventType: string;
  data: unknown;
}

/** What {@link runFlow} did. */
export interface FlowResult {
  flow: FlowName;
  steps: FlowStep[];
  /** The resources it created or changed, by kind (`customer`, `invoice`, `payment`, `refund`, `dispute`, `subscription`). */
  resources: Record<string, string[]>;
  /** The events the simulator emitted for this flow's resources, oldest first. */
  events: FlowEvent[];
}

/** Where {@link runFlow} sends its calls. */
export interface RunFlowOptions {
  /** The simulator's base URL, e.g. `http://127.0.0.1:4010`. */
  baseUrl: string;
  /** A staging key. Default `sk_test_local`. Production keys (`sk_live_…`) are refused: flows make test data. */
  apiKey?: string | undefined;
  /**
   * Values for the objects the flow creates, e.g. `{ set: { 'invoice.amount': '777' }, add: { 'customer.metadata.plan': 'gold' } }`.
   * A path the flow does not create throws a `FlowOverrideError` listing the paths it does, before any call.
   */
  overrides?: FlowOverrides | undefined;
}

interface FlowRun {
  overrides: ResolvedOverrides;
  /** The simulator's time when the flow started (its clock may be manual), ms since the epoch. */
  now: number;
  api: ApiClient;
  sandbox: SandboxClient;
  tag: string;
  step(call: string, result: string, resource?: { kind: string; id: string }): void;
}

interface Flow extends FlowDescription {
  run(run: FlowRun): Promise<void>;
}

const PAID_BY_SERVICE: readonly EventType[] = ['PAYMENT_ATTEMPT_SUCCEEDED', 'INVOICE_PAID', 'PAYMENT_COMPLETED'];

const FLOWS: Record<FlowName, Flow> = {
  'cash-payment': {
    name: 'cash-payment',
    creates: ['customer', 'invoice'],
    summary: 'customer → invoice → CASH payment → sandbox completion: the invoice is paid',
    events: ['CUSTOMER_CREATED', 'INVOICE_CREATED', ...PAID_BY_SERVICE],
    run: async (run) => void (await paidInvoice(run, 'CASH')),
  },
  'transfer-payment': {
    name: 'transfer-payment',
    creates: ['customer', 'invoice'],
    summary: 'customer → invoice → TRANSFER payment → sandbox completion: the invoice is paid',
    events: ['CUSTOMER_CREATED', 'INVOICE_CREATED', ...PAID_BY_SERVICE],
    run: async (run) => void (await paidInvoice(run, 'TRANSFER')),
  },
  'mark-paid': {
    name: 'mark-paid',
    creates: ['customer', 'invoice'],
    summary: 'customer → invoice → marked paid outside the service (an OTHER payment)',
    events: ['CUSTOMER_CREATED', 'INVOICE_CREATED', 'INVOICE_PAID_OTHER', 'PAYMENT_COMPLETED'],
    async run(run) {
      const invoice = await newInvoice(run, await newCustomer(run));
      const { payment } = await run.api.invoices.markPaid(invoice.id, { description: 'Paid at the front desk' });
      run.step(`POST /v1/invoices/${invoice.id}/mark-paid`, `payment ${payment.id} OTHER; invoice ${invoice.id} paid`, {
        kind: 'payment',
        id: payment.id,
      });
    },
  },
  'failed-attempt': {
    name: 'failed-attempt',
    creates: ['customer', 'invoice'],
    summary: 'customer → invoice → TRANSFER payment → a failed sandbox attempt: the payment stays pending',
    events: ['CUSTOMER_CREATED', 'INVOICE_CREATED', 'PAYMENT_ATTEMPT_FAILED'],
    async run(run) {
      const invoice = await newInvoice(run, await newCustomer(run));
      const payment = await pendingPayment(run, invoice, 'TRANSFER');
      const failed = await run.sandbox.failPayment(payment);
      run.step(
        `POST /v1/sandbox/payments/${payment}/complete {"outcome":"FAILED"}`,
        `attempt failed; payment ${payment} ${failed.payment.status ?? 'PENDING'}, invoice ${invoice.id} unpaid`,
      );
    },
  },
  refund: {
    name: 'refund',
    creates: ['customer', 'invoice'],
    summary: 'a CASH payment completed, then refunded in full',
    events: ['CUSTOMER_CREATED', 'INVOICE_CREATED', ...PAID_BY_SERVICE, 'PAYMENT_REFUNDED'],
    async run(run) {
      const payment = await paidInvoice(run, 'CASH');
      const { refund } = await run.sandbox.refundPayment(payment, { reason: 'Customer request (simulated)' });
      run.step(`POST /v1/sandbox/payments/${payment}/refund`, `refund ${refund.id} ${refund.amount} ${refund.currency} ${refund.status}`, {
        kind: 'refund',
        id: refund.id,
      });
    },
  },
  dispute: {
    name: 'dispute',
    creates: ['customer', 'invoice'],
    summary: 'a TRANSFER payment completed, then disputed, answered and resolved as WON',
    events: ['CUSTOMER_CREATED', 'INVOICE_CREATED', ...PAID_BY_SERVICE, 'DISPUTE_CREATED', 'DISPUTE_RESPONSE_CREATED', 'DISPUTE_RESOLVED'],
    async run(run) {
      const payment = await paidInvoice(run, 'TRANSFER');
      const opened = await run.sandbox.openDispute(payment, { reason: 'NOT_RECEIVED' });
      run.step(`POST /v1/sandbox/payments/${payment}/dispute`, `dispute ${opened.id} ${opened.status}`, { kind: 'dispute', id: opened.id });
      const answered = await run.sandbox.respondToDispute(opened.id, { evidence: 'Receipt and delivery confirmation (simulated)' });
      run.step(`POST /v1/sandbox/disputes/${opened.id}/respond`, `dispute ${opened.id} ${answered.status}`);
      const resolved = await run.sandbox.resolveDispute(opened.id, { outcome: 'WON' });
      run.step(`POST /v1/sandbox/disputes/${opened.id}/resolve {"outcome":"WON"}`, `dispute ${opened.id} ${resolved.status}`);
    },
  },
  'subscription-cycle': {
    name: 'subscription-cycle',
    creates: ['customer', 'subscription'],
    summary: "subscription → one monthly cycle's invoice, paid by TRANSFER → subscription canceled",
    events: [
      'CUSTOMER_CREATED',
      'SUBSCRIPTION_CREATED',
      'INVOICE_CREATED',
      'SUBSCRIPTION_UPDATED',
      ...PAID_BY_SERVICE,
      'SUBSCRIPTION_CANCELED',
    ],
    async run(run) {
      const customer = await newCustomer(run);
      const { amount = 49_900, currency = 'MXN', ...rest } = run.overrides.subscription.fields;
      const subscription = await run.sandbox.createSubscription({
        customerId: customer.id,
        description: 'Monthly membership (simulated)',
        items: [{ quantity: 1, concept: { displayName: 'Membership', amount: Number(amount), currency: String(currency) } }],
        ...rest,
      });
      run.step('POST /v1/sandbox/subscriptions', `subscription ${subscription.id} ${subscription.status}, monthly`, {
        kind: 'subscription',
        id: subscription.id,
      });
      const { invoice, subscription: cycled } = await run.sandbox.cycleSubscription(subscription.id);
      run.step(
        `POST /v1/sandbox/subscriptions/${subscription.id}/cycle`,
        `invoice ${invoice.id} ${invoice.amount} ${invoice.currency}; next collection ${cycled.nextCollectionDate ?? 'none'}`,
        { kind: 'invoice', id: invoice.id },
      );
      await settle(run, invoice, 'TRANSFER');
      const canceled = await run.sandbox.cancelSubscription(subscription.id);
      run.step(`POST /v1/sandbox/subscriptions/${subscription.id}/cancel`, `subscription ${subscription.id} ${canceled.status}`);
    },
  },
  'direct-debit': {
    name: 'direct-debit',
    creates: ['customer', 'invoice'],
    summary: 'customer → card saved for direct debit → invoice → TRANSFER payment → a failed attempt, then a successful one',
    events: ['CUSTOMER_CREATED', 'PAYMENT_METHOD_CREATED', 'INVOICE_CREATED', 'PAYMENT_ATTEMPT_FAILED', ...PAID_BY_SERVICE],
    async run(run) {
      const customer = await newCustomer(run);
      const method = await run.sandbox.savePaymentMethod(customer.id, { type: 'CARD', brand: 'VISA', last4: '4242' });
      run.step(
        `POST /v1/sandbox/customers/${customer.id}/payment-methods`,
        `payment method ${method.id} CARD VISA ···4242, charges consented`,
      );
      const invoice = await newInvoice(run, customer);
      const payment = await pendingPayment(run, invoice, 'TRANSFER');
      await run.sandbox.failPayment(payment);
      run.step(`POST /v1/sandbox/payments/${payment}/complete {"outcome":"FAILED"}`, `attempt 1 failed; payment ${payment} pending`);
      const completed = await run.api.sandbox.completePayment(payment, { outcome: 'SUCCEEDED' });
      run.step(
        `POST /v1/sandbox/payments/${payment}/complete {"outcome":"SUCCEEDED"}`,
        `attempt 2 ${completed.payment.status ?? 'SUCCEEDED'}; invoice ${invoice.id} paid`,
      );
    },
  },
};

/** The flows with their summaries and events, in `--help` order. */
export const FLOW_DESCRIPTIONS: readonly FlowDescription[] = FLOW_NAMES.map((name) => {
  const { run: _run, ...description } = FLOWS[name];
  return description;
});

/** True for the name of a flow. */
export function isFlowName(value: string): value is FlowName {
  return (FLOW_NAMES as readonly string[]).includes(value);
}

/**
 * The first flow (in `--help` order) that causes `eventType`, or undefined for the types no flow causes
 * (INVOICE_UPDATED, INVOICE_CANCELED, CUSTOMER_UPDATED, CUSTOMER_ARCHIVED; two of them have sandbox calls, which
 * are not flows).
 *
 * @example
 * flowFor('PAYMENT_REFUNDED'); // 'refund'
 */
export function flowFor(eventType: string): FlowName | undefined {
  return FLOW_NAMES.find((name) => (FLOWS[name].events as readonly string[]).includes(eventType));
}

/**
 * Runs a flow against a running simulator through its REST interface: the API client for the calls the spec
 * has, the sandbox client for the simulator's own. Each resource is new (a customer with a unique username),
 * so flows can run any number of times. Resolves with the calls made and the events the simulator emitted for
 * the flow's resources; rejects with a {@link FlowError} (the steps done, and the client's typed error as
 * `cause`: `ConflictError`, `ApiConnectionError`, …) at the first call that fails.
 *
 * @example
 * const result = await runFlow('refund', { baseUrl: 'http://127.0.0.1:4010' });
 * result.events.map((event) => event.eventType); // [..., 'PAYMENT_REFUNDED']
 */
export async function runFlow(name: FlowName, options: RunFlowOptions): Promise<FlowResult> {
  if (!isFlowName(name)) throw new TypeError(`Unknown flow ${JSON.stringify(name)}. Flows: ${FLOW_NAMES.join(', ')}.`);
  const overrides = resolveOverrides(name, FLOWS[name].creates, options.overrides, {
    customer: [{ key: 'source', value: 'payhooks trigger' }],
    invoice: [{ key: 'flow', value: name }],
  });
  const apiKey = options.apiKey ?? 'sk_test_local';
  if (apiKey.startsWith('sk_live_')) {
    throw new ApiInputError('Flows create test data and use the sandbox: give a staging key (sk_test_…), not a production key (sk_live_…)');
  }
  const api = createClient({ apiKey, environment: options.baseUrl });
  const sandbox = createSandboxClient({ baseUrl: api.baseUrl, apiKey });
  const steps: FlowStep[] = [];
  const resources: Record<string, string[]> = {};
  try {
    const before = (await sandbox.listEvents({ take: 1 })).total ?? 0;
    // Dates the flow gives (an invoice due in a week) count from the simulator's time, which may be manual.
    const now = Date.parse((await sandbox.clock()).now);
    await FLOWS[name].run({
      overrides,
      now,
      api,
      sandbox,
      tag: `${name}-${randomBytes(4).toString('hex')}`,
      step(call, result, resource) {
        steps.push({ call, result });
        if (resource) resources[resource.kind] = [...(resources[resource.kind] ?? []), resource.id];
      },
    });
    return { flow: name, steps, resources, events: await eventsOf(sandbox, before, resources.customer?.[0] ?? '') };
  } catch (err) {
    throw new FlowError(name, steps, err);
  }
}

/** A flow the simulator (or the network) stopped; `steps` are the calls that succeeded before, `cause` the client's error. */
export class FlowError extends PayhooksError {
  constructor(
    readonly flow: FlowName,
    readonly steps: readonly FlowStep[],
    cause: unknown,
  ) {
    super(`flow ${flow} stopped after ${steps.length} step${steps.length === 1 ? '' : 's'}: ${PayhooksError.describe(cause)}`, {
      cause,
    });
  }
}

async function eventsOf(sandbox: SandboxClient, before: number, customerId: string): Promise<FlowEvent[]> {
  // Every event of every flow carries the flow's customer, which no other run shares: that tells this run's
  // events from those of calls made by others in the meantime.
  const events: FlowEvent[] = [];
  for (let skip = before; ; ) {
    const page = await sandbox.listEvents({ skip, take: 100 });
    for (const event of page.data) {
      if (JSON.stringify(event.data).includes(customerId)) {
        events.push({ eventId: event.eventId, eventType: event.eventType, data: event.data });
      }
    }
    skip += page.data.length;
    if (page.data.length < 100) return events;
  }
}

async function newCustomer(run: FlowRun): Promise<ApiCustomer> {
  const { fields, metadata } = run.overrides.customer;
  const customer = await run.api.customers.create({
    username: run.tag,
    name: 'Ada Lovelace (simulated)',
    email: `${run.tag}@example.com`,
    ...fields,
    ...(metadata.length > 0 ? { metadata } : {}),
  });
  run.step('POST /v1/customers', `customer ${customer.id} (username ${customer.username})`, { kind: 'customer', id: customer.id });
  return customer;
}

async function newInvoice(run: FlowRun, customer: ApiCustomer): Promise<ApiInvoice> {
  const { fields, metadata } = run.overrides.invoice;
  const { amount = 250_000, currency = 'MXN', ...rest } = fields;
  const invoice = await run.api.invoices.create({
    customerId: customer.id,
    dueDate: new Date(run.now + 7 * 24 * 60 * 60 * 1000).toISOString(),
    items: [{ quantity: 1, concept: { displayName: 'Tuition (simulated)', amount: Number(amount), currency: String(currency) } }],
    ...rest,
    ...(metadata.length > 0 ? { metadata } : {}),
  });
  run.step('POST /v1/invoices', `invoice ${invoice.id} ${invoice.amount} ${invoice.currency}, unpaid`, { kind: 'invoice', id: invoice.id });
  return invoice;
}

async function pendingPayment(run: FlowRun, invoice: ApiInvoice, paymentType: 'CASH' | 'TRANSFER'): Promise<string> {
  const { payment } = await run.api.invoices.requestPayment(invoice.id, { paymentType });
  run.step(`POST /v1/invoices/${invoice.id}/payments`, `payment ${payment.id} ${paymentType} ${payment.status ?? 'PENDING'}`, {
    kind: 'payment',
    id: payment.id,
  });
  return payment.id;
}

/** Requests a payment of the invoice and completes it in the sandbox; resolves to the payment's id. */
async function settle(run: FlowRun, invoice: ApiInvoice, paymentType: 'CASH' | 'TRANSFER'): Promise<string> {
  const paymentId = await pendingPayment(run, invoice, paymentType);
  const completed = await run.api.sandbox.completePayment(paymentId, { outcome: 'SUCCEEDED' });
  run.step(
    `POST /v1/sandbox/payments/${paymentId}/complete {"outcome":"SUCCEEDED"}`,
    `payment ${paymentId} ${completed.payment.status ?? 'SUCCEEDED'}; invoice ${invoice.id} paid`,
  );
  return paymentId;
}

async function paidInvoice(run: FlowRun, paymentType: 'CASH' | 'TRANSFER'): Promise<string> {
  const invoice = await newInvoice(run, await newCustomer(run));
  return settle(run, invoice, paymentType);
}
