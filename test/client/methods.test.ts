import { describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/index.js';
import type { Reply } from '../helpers/api-server.js';
import { API_KEY, customer, invoice, payment, useApiServer, webhookEndpoint, webhookEventRecord } from './support.js';

const { server, client } = useApiServer();

interface MethodCase {
  name: string;
  call: (client: ApiClient) => Promise<unknown>;
  method: string;
  path: string;
  /** The `input` the body must hold; undefined: no body at all. */
  input?: unknown;
  query?: Record<string, string>;
  reply: Reply;
}

const newInvoice = {
  customerId: 'cus_1',
  dueDate: '2026-11-30T06:00:00Z',
  collectionMethod: 'AUTOMATIC',
  items: [{ quantity: 2, concept: { displayName: 'Tuition', amount: 250000, currency: 'MXN' } }],
};

const cases: MethodCase[] = [
  {
    name: 'customers.create',
    call: (c) => c.customers.create({ username: 'ada', name: 'Ada Example', email: 'ada@example.com', phoneNumber: '+525500000001' }),
    method: 'POST',
    path: '/v1/customers',
    input: { username: 'ada', name: 'Ada Example', email: 'ada@example.com', phoneNumber: '+525500000001' },
    reply: { json: customer },
  },
  { name: 'customers.get', call: (c) => c.customers.get('cus_1'), method: 'GET', path: '/v1/customers/cus_1', reply: { json: customer } },
  {
    name: 'customers.list',
    call: (c) => c.customers.list({ take: 5, skip: 10 }),
    method: 'GET',
    path: '/v1/customers',
    query: { take: '5', skip: '10' },
    reply: { json: { data: [customer] } },
  },
  {
    name: 'invoices.list',
    call: (c) => c.invoices.list({ take: 3 }),
    method: 'GET',
    path: '/v1/invoices',
    query: { take: '3' },
    reply: { json: { data: [invoice] } },
  },
  {
    name: 'invoices.create',
    call: (c) => c.invoices.create(newInvoice),
    method: 'POST',
    path: '/v1/invoices',
    input: newInvoice,
    reply: { json: invoice },
  },
  { name: 'invoices.get', call: (c) => c.invoices.get('inv_1'), method: 'GET', path: '/v1/invoices/inv_1', reply: { json: invoice } },
  {
    name: 'invoices.requestPayment',
    call: (c) => c.invoices.requestPayment('inv_1', { paymentType: 'TRANSFER' }),
    method: 'POST',
    path: '/v1/invoices/inv_1/payments',
    input: { paymentType: 'TRANSFER' },
    reply: { json: { payment, instructions: { clabe: '000000000000000000' } } },
  },
  {
    name: 'invoices.markPaid',
    call: (c) => c.invoices.markPaid('inv_1', { description: 'paid at the front desk' }),
    method: 'POST',
    path: '/v1/invoices/inv_1/mark-paid',
    input: { description: 'paid at the front desk' },
    reply: { json: { invoice, payment: { ...payment, type: 'OTHER' } } },
  },
  {
    name: 'invoices.markPaid (no fields)',
    call: (c) => c.invoices.markPaid('inv_1'),
    method: 'POST',
    path: '/v1/invoices/inv_1/mark-paid',
    input: {},
    reply: { json: { invoice, payment } },
  },
  { name: 'payments.get', call: (c) => c.payments.get('pay_1'), method: 'GET', path: '/v1/payments/pay_1', reply: { json: payment } },
  {
    name: 'sandbox.completePayment',
    call: (c) => c.sandbox.completePayment('pay_1', { outcome: 'SUCCEEDED' }),
    method: 'POST',
    path: '/v1/sandbox/payments/pay_1/complete',
    input: { outcome: 'SUCCEEDED' },
    reply: { json: { payment: { ...payment, status: 'SUCCEEDED' }, invoice } },
  },
  {
    name: 'webhooks.create',
    call: (c) => c.webhooks.create({ url: 'https://example.com/webhooks', description: 'sync', enabledEvents: ['INVOICE_PAID'] }),
    method: 'POST',
    path: '/v1/webhooks',
    input: { url: 'https://example.com/webhooks', description: 'sync', enabledEvents: ['INVOICE_PAID'] },
    reply: { json: webhookEndpoint },
  },
  {
    name: 'webhooks.list',
    call: (c) => c.webhooks.list({ take: 10, skip: 20 }),
    method: 'GET',
    path: '/v1/webhooks',
    query: { take: '10', skip: '20' },
    reply: { json: { data: [webhookEndpoint], total: 21, take: 10, skip: 20 } },
  },
  {
    name: 'webhooks.getSecret',
    call: (c) => c.webhooks.getSecret('wh_1'),
    method: 'GET',
    path: '/v1/webhooks/wh_1/secret',
    reply: { json: { secret: 'whsec_abc' } },
  },
  {
    name: 'webhooks.rotateSecret',
    call: (c) => c.webhooks.rotateSecret('wh_1'),
    method: 'POST',
    path: '/v1/webhooks/wh_1/secret/rotate',
    reply: { json: { secret: 'whsec_new' } },
  },
  {
    name: 'webhookEvents.list',
    call: (c) => c.webhookEvents.list({ take: 50, status: 'failed' }),
    method: 'GET',
    path: '/v1/webhook-events',
    query: { take: '50', status: 'failed' },
    reply: { json: { data: [webhookEventRecord], total: 1 } },
  },
  {
    name: 'webhookEvents.retry',
    call: (c) => c.webhookEvents.retry('whe_1'),
    method: 'POST',
    path: '/v1/webhook-events/whe_1/retry',
    reply: { json: webhookEventRecord },
  },
  {
    name: 'customerPortal.createSession',
    call: (c) => c.customerPortal.createSession({ destination: 'home', customerId: 'cus_1' }),
    method: 'POST',
    path: '/v1/customer-portal-session',
    input: { destination: 'home', customerId: 'cus_1' },
    reply: { json: { url: 'https://portal.example.com/s/abc' } },
  },
  {
    name: 'authLinks.create',
    call: (c) => c.authLinks.create({ customerId: 'cus_1', url: 'https://portal.example.com/pay' }),
    method: 'POST',
    path: '/v1/auth-links',
    input: { customerId: 'cus_1', url: 'https://portal.example.com/pay' },
    reply: { json: { url: 'https://portal.example.com/s/xyz' } },
  },
];

describe('every method', () => {
  it.each(cases)('$name: $method $path with the bearer key, {input} wrapping and JSON', async (testCase) => {
    server().queue(testCase.reply);
    const result = await testCase.call(client());

    expect(server().requests).toHaveLength(1);
    const [request] = server().requests;
    expect(request!.method).toBe(testCase.method);
    expect(request!.path).toBe(testCase.path);
    expect(request!.query).toEqual(testCase.query ?? {});
    expect(request!.headers.authorization).toBe(`Bearer ${API_KEY}`);
    expect(request!.headers.accept).toBe('application/json');
    if (testCase.input === undefined) {
      expect(request!.rawBody).toBe('');
      expect(request!.headers['content-type']).toBeUndefined();
    } else {
      expect(request!.headers['content-type']).toBe('application/json');
      expect(request!.body).toEqual({ input: testCase.input });
    }
    if (testCase.method === 'GET') expect(request!.headers['x-idempotency-key']).toBeUndefined();
    else expect(request!.headers['x-idempotency-key']).toMatch(/^[0-9a-f-]{36}$/);

    // What came back is what was sent, parsed (lists as their page).
    expect(result).toEqual(testCase.reply.json);
  });

  it('covers every method of every resource group', () => {
    const c = client();
    const groups = ['customers', 'invoices', 'payments', 'sandbox', 'webhooks', 'webhookEvents', 'customerPortal', 'authLinks'] as const;
    const named = new Set(cases.map((testCase) => testCase.name.replace(/ \(.*\)$/, '')));
    for (const group of groups) {
      const prototype = Object.getPrototypeOf(c[group]) as object;
      for (const method of Object.getOwnPropertyNames(prototype)) {
        if (method === 'constructor' || method === 'iterate') continue;
        expect(named, `${group}.${method} has no case`).toContain(`${group}.${method}`);
      }
    }
  });

  it('gives every write its own idempotency key', async () => {
    server().route('POST', '/v1/webhooks/:id/secret/rotate', { json: { secret: 'whsec_new' } });
    await client().webhooks.rotateSecret('wh_1');
    await client().webhooks.rotateSecret('wh_1');
    const [a, b] = server().requests.map((r) => r.headers['x-idempotency-key']);
    expect(a).toBeTypeOf('string');
    expect(a).not.toBe(b);
  });

  it('encodes ids in the path', async () => {
    server().queue({ json: { ...invoice, id: 'inv/1 2' } });
    await client().invoices.get('inv/1 2');
    expect(server().requests[0]!.path).toBe('/v1/invoices/inv%2F1%202');
  });

  it('keeps unknown response fields at run time', async () => {
    server().queue({ json: { ...invoice, status: 'PENDING', extra: { nested: true }, items: [{ ...invoice.items[0], taxRate: 0.16 }] } });
    const result = (await client().invoices.get('inv_1')) as unknown as Record<string, unknown>;
    expect(result.status).toBe('PENDING');
    expect(result.extra).toEqual({ nested: true });
    expect((result.items as Record<string, unknown>[])[0]!.taxRate).toBe(0.16);
  });

  it('accepts a bare array as a list page', async () => {
    server().queue({ json: [invoice, { ...invoice, id: 'inv_2' }] });
    const page = await client().invoices.list();
    expect(page.data.map((i) => i.id)).toEqual(['inv_1', 'inv_2']);
    expect(server().requests[0]!.query).toEqual({});
  });

  it('uses overridden base paths and a base URL with a path prefix', async () => {
    server().queue({ json: payment }, { json: invoice });
    const c = client({ environment: `${server().url}/api/`, paths: { payments: '/v1/payment-records' } });
    await c.payments.get('pay_1');
    await c.invoices.get('inv_1');
    expect(server().requests.map((r) => r.path)).toEqual(['/api/v1/payment-records/pay_1', '/api/v1/invoices/inv_1']);
  });
});
