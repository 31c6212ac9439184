import { afterAll, beforeEach } from 'vitest';
import { createClient, type ClientOptions } from '../../src/client/index.js';
import { startApiServer, type ApiServer } from '../helpers/api-server.js';

export const API_KEY = 'sk_test_payhooks_0123456789';

export const customer = {
  id: 'cus_1',
  username: 'ada',
  name: 'Ada Example',
  email: 'ada@example.com',
  phoneNumber: '+525500000001',
  metadata: [],
  meta: {},
};
export const invoice = {
  id: 'inv_1',
  amount: 250000,
  currency: 'MXN',
  dueDate: '2026-11-30T06:00:00.000Z',
  items: [{ description: 'Tuition', amount: 250000, currency: 'MXN', quantity: 1, conceptId: 'con_1' }],
  metadata: [],
  meta: {},
};
export const payment = { id: 'pay_1', amount: 250000, currency: 'MXN', type: 'CASH', status: 'PENDING', invoiceId: 'inv_1' };
export const webhookEndpoint = { id: 'wh_1', url: 'https://example.com/webhooks', description: 'sync', enabledEvents: ['INVOICE_PAID'] };
export const webhookEventRecord = {
  id: 'whe_1',
  endpointId: 'wh_1',
  eventId: 'evt_1',
  eventType: 'INVOICE_PAID',
  status: 'delivered',
  attempts: [{ attemptNumber: 1, attemptedAt: '2026-11-01T00:00:00.000Z', responseStatus: 200 }],
  createdAt: '2026-11-01T00:00:00.000Z',
};

/** Starts one test server for the file and clears it before each test; returns a getter and a client maker. */
export function useApiServer(): { server: () => ApiServer; client: (options?: Partial<ClientOptions>) => ReturnType<typeof createClient> } {
  let server: ApiServer | undefined;
  const started = startApiServer().then((s) => (server = s));
  beforeEach(async () => {
    await started;
    server!.reset();
  });
  afterAll(async () => {
    await (await started).close();
  });
  return {
    server: () => server!,
    client: (options = {}) => createClient({ apiKey: API_KEY, environment: server!.url, rateLimit: false, ...options }),
  };
}
