import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiInputError, createClient, type ApiClient, type ClientOptions } from '../../src/client/index.js';
import { API_KEY, useApiServer } from './support.js';

const { server, client } = useApiServer();

/** Asserts `call` fails with an ApiInputError matching `message`, and that the server saw no request. */
async function refusedBeforeSending(
  call: (c: ApiClient) => Promise<unknown>,
  message: RegExp,
  c: ApiClient = client(),
): Promise<ApiInputError> {
  const error = await call(c).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(ApiInputError);
  expect((error as Error).message).toMatch(message);
  await new Promise((resolve) => setTimeout(resolve, 20));
  expect(server().requests).toEqual([]);
  return error as ApiInputError;
}

describe('refused before any request', () => {
  it('a take of 101 (and of 0)', async () => {
    const error = await refusedBeforeSending((c) => c.invoices.list({ take: 101 }), /take must be at most 100/);
    expect(error.issues).toEqual([{ path: 'query.take', message: "take must be at most 100 (the service's page size limit)" }]);
    await refusedBeforeSending((c) => c.customers.list({ take: 0 }), /query\.take/);
    await refusedBeforeSending((c) => c.webhookEvents.list({ take: 101 }), /query\.take/);
  });

  it('a phone number that is not E.164, without echoing it', async () => {
    const error = await refusedBeforeSending(
      (c) => c.customers.create({ username: 'ada', phoneNumber: '55 1234 5678' }),
      /input\.phoneNumber: must be an E\.164 phone number/,
    );
    expect(error.message).not.toContain('55 1234 5678');
  });

  it('an http webhook URL that is not loopback', async () => {
    await refusedBeforeSending(
      (c) => c.webhooks.create({ url: 'http://example.com/webhooks', description: 'x', enabledEvents: ['INVOICE_PAID'] }),
      /input\.url: must be an https URL/,
    );
  });

  it('an unknown event type', async () => {
    const error = await refusedBeforeSending(
      (c) =>
        // @ts-expect-error not an event type
        c.webhooks.create({ url: 'https://example.com/webhooks', description: 'x', enabledEvents: ['INVOICE_PAID', 'INVOICE_EXPLODED'] }),
      /input\.enabledEvents\.1/,
    );
    expect(error.issues).toHaveLength(1);
  });

  it('the sandbox in production (environment or sk_live_ key)', async () => {
    const production = createClient({ apiKey: 'sk_live_abc', environment: 'production', baseUrl: server().url, rateLimit: false });
    expect(production.environment).toBe('production');
    await refusedBeforeSending((c) => c.sandbox.completePayment('pay_1', { outcome: 'SUCCEEDED' }), /works only in staging/, production);
    const liveByUrl = createClient({ apiKey: 'sk_live_abc', environment: server().url, rateLimit: false });
    expect(liveByUrl.environment).toBe('production');
    await refusedBeforeSending((c) => c.sandbox.completePayment('pay_1', { outcome: 'SUCCEEDED' }), /works only in staging/, liveByUrl);
  });

  it('an empty id, an unknown payment type, a bad invoice', async () => {
    await refusedBeforeSending((c) => c.invoices.get(''), /the id must be a non-empty string/);
    // @ts-expect-error only CASH or TRANSFER
    await refusedBeforeSending((c) => c.invoices.requestPayment('inv_1', { paymentType: 'CARD' }), /input\.paymentType/);
    await refusedBeforeSending(
      (c) => c.invoices.create({ customerId: 'cus_1', dueDate: 'tomorrow', items: [] }),
      /input\.dueDate.*input\.items/,
    );
  });

  it('a bad per-call option', async () => {
    await refusedBeforeSending(
      (c) => c.customers.create({ username: 'ada' }, { idempotencyKey: '' }),
      /idempotencyKey must be a non-empty string/,
    );
    await refusedBeforeSending((c) => c.invoices.get('inv_1', { timeoutMs: -1 }), /timeoutMs must be a positive number/);
  });
});

describe('createClient options', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  const make = (options: Partial<ClientOptions>) => () =>
    createClient({ apiKey: API_KEY, environment: server().url, ...options } as ClientOptions);

  it('refuses a key that does not start with sk_, without printing it', () => {
    for (const apiKey of ['pk_test_secret123', 'Bearer sk_test_x', '', 'sk_']) {
      let error: unknown;
      try {
        make({ apiKey })();
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ApiInputError);
      expect((error as Error).message).toMatch(/apiKey/);
      if (apiKey.length > 3) expect((error as Error).message).not.toContain(apiKey.slice(3));
    }
    expect(() => make({ apiKey: undefined as unknown as string })()).toThrow(/apiKey is required/);
  });

  it('needs an address for a named environment: baseUrl, else PAYHOOKS_API_URL, else a clear error', () => {
    vi.stubEnv('PAYHOOKS_API_URL', '');
    expect(() => createClient({ apiKey: API_KEY, environment: 'staging' })).toThrow(/address must be given.*PAYHOOKS_API_URL/);
    expect(createClient({ apiKey: API_KEY, environment: 'staging', baseUrl: 'https://api.staging.test/' }).baseUrl).toBe(
      'https://api.staging.test',
    );
    vi.stubEnv('PAYHOOKS_API_URL', 'https://from-env.test');
    const fromEnv = createClient({ apiKey: API_KEY, environment: 'staging' });
    expect([fromEnv.baseUrl, fromEnv.environment]).toEqual(['https://from-env.test', 'staging']);
    const noEnvironment = createClient({ apiKey: 'sk_live_1' });
    expect([noEnvironment.baseUrl, noEnvironment.environment]).toEqual(['https://from-env.test', 'production']);
  });

  it('reads the environment from the key when given a URL, and refuses a contradiction', () => {
    expect(make({ apiKey: 'sk_test_1' })().environment).toBe('staging');
    expect(make({ apiKey: 'sk_live_1' })().environment).toBe('production');
    expect(make({ apiKey: 'sk_other_1' })().environment).toBe('staging');
    expect(() => createClient({ apiKey: 'sk_live_1', environment: 'staging', baseUrl: 'https://x.test' })).toThrow(/production key/);
    expect(() => createClient({ apiKey: 'sk_test_1', environment: 'production', baseUrl: 'https://x.test' })).toThrow(/staging key/);
    expect(createClient({ apiKey: 'sk_other_1', environment: 'production', baseUrl: 'https://x.test' }).environment).toBe('production');
  });

  it('names each bad option', () => {
    expect(() => make({ timeoutMs: 0 })()).toThrow(/Invalid client options: timeoutMs/);
    expect(() => make({ maxRetries: -1 })()).toThrow(/maxRetries/);
    expect(() => make({ environment: 'prod' })()).toThrow(/environment: must be 'staging', 'production' or the service's base URL/);
    expect(() => make({ rateLimit: { requestsPerMinute: 0 } })()).toThrow(/rateLimit/);
    expect(() => make({ paths: { invoices: 'v1/invoices' } })()).toThrow(/paths\.invoices/);
    expect(() => make({ paths: { invoice: '/v1/x' } } as unknown as Partial<ClientOptions>)()).toThrow(/paths/);
    expect(() => make({ timeout: 5 } as unknown as Partial<ClientOptions>)()).toThrow(/timeout/);
    expect(() => make({ fetch: 'no' as unknown as typeof fetch })()).toThrow(/fetch/);
  });
});
