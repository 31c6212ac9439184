import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { ApiConnectionError, ApiTimeoutError, ConflictError, createClient, RateLimitError, ServerError } from '../../src/client/index.js';
import { listen } from '../helpers/servers.js';
import { API_KEY, customer, invoice, useApiServer } from './support.js';

const { server, client } = useApiServer();
const unavailable = { status: 503, json: { error: { message: 'try again' } } };

describe('retries and idempotency', () => {
  it('sends a write that gets 503 twice, then 200, three times with one idempotency key', async () => {
    server().queue(unavailable, unavailable, { json: customer });
    const created = await client().customers.create({ username: 'ada' });
    expect(created.id).toBe('cus_1');
    const keys = server().requests.map((r) => r.headers['x-idempotency-key']);
    expect(keys).toHaveLength(3);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
    expect(server().requests.map((r) => r.rawBody)).toEqual(Array(3).fill(JSON.stringify({ input: { username: 'ada' } })));
  });

  it("uses the caller's idempotency key as is, on every attempt", async () => {
    server().queue(unavailable, { json: customer });
    await client().customers.create({ username: 'ada' }, { idempotencyKey: 'evt_42:create-customer' });
    expect(server().requests.map((r) => r.headers['x-idempotency-key'])).toEqual(['evt_42:create-customer', 'evt_42:create-customer']);
  });

  it('gives up after maxRetries and throws the ServerError with the message', async () => {
    server().queue(unavailable, unavailable, unavailable, { json: customer });
    const error = await client({ maxRetries: 2 })
      .customers.create({ username: 'ada' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect((error as ServerError).status).toBe(503);
    expect((error as ServerError).message).toContain('try again');
    expect(server().requests).toHaveLength(3);
  });

  it('does not retry a write sent without an idempotency key after a 5xx', async () => {
    server().queue(unavailable, { json: customer });
    await expect(client().customers.create({ username: 'ada' }, { idempotencyKey: false })).rejects.toBeInstanceOf(ServerError);
    expect(server().requests).toHaveLength(1);
    expect(server().requests[0]!.headers['x-idempotency-key']).toBeUndefined();
  });

  it('never retries a 409', async () => {
    server().queue({ status: 409, json: { error: { message: 'username taken' } } }, { json: customer });
    await expect(client().customers.create({ username: 'ada' })).rejects.toBeInstanceOf(ConflictError);
    expect(server().requests).toHaveLength(1);
  });

  it('waits out a 429 with Retry-After: 1 (seconds), also for a write without a key', async () => {
    server().queue({ status: 429, headers: { 'retry-after': '1' }, json: { error: { message: 'slow down' } } }, { json: customer });
    const created = await client().customers.create({ username: 'ada' }, { idempotencyKey: false });
    expect(created.username).toBe('ada');
    const [first, second] = server().requests;
    expect(server().requests).toHaveLength(2);
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(950);
    expect(second!.at - first!.at).toBeLessThan(3000);
  });

  it('waits out a 429 whose Retry-After is an HTTP date', async () => {
    // HTTP dates have whole seconds, so two seconds ahead means a wait of more than one and at most two.
    const retryAt = new Date(Date.now() + 2000).toUTCString();
    server().queue({ status: 429, headers: { 'retry-after': retryAt }, json: { error: { message: 'slow down' } } }, { json: invoice });
    await client().invoices.get('inv_1');
    const [first, second] = server().requests;
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(900);
    expect(second!.at - first!.at).toBeLessThan(3000);
  });

  it('throws the RateLimitError at once when Retry-After is beyond maxRetryAfterMs', async () => {
    server().queue({ status: 429, headers: { 'retry-after': '120' }, json: { error: { message: 'quota spent' } } }, { json: invoice });
    const started = Date.now();
    const error = await client()
      .invoices.get('inv_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitError);
    expect((error as RateLimitError).retryAfter).toBe(120);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(server().requests).toHaveLength(1);
  });

  it('sends a write without a key that times out exactly once, and throws ApiTimeoutError', async () => {
    server().queue({ hang: true }, { json: customer });
    const started = Date.now();
    const error = await client({ timeoutMs: 200 })
      .customers.create({ username: 'ada' }, { idempotencyKey: false })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiTimeoutError);
    expect((error as ApiTimeoutError).message).toMatch(/POST \/v1\/customers: no response within 200 ms/);
    expect(Date.now() - started).toBeLessThan(1500);
    // Let a (wrong) retry have its chance to arrive before counting.
    await new Promise((resolve) => setTimeout(resolve, 700));
    expect(server().requests).toHaveLength(1);
  });

  it('retries a GET that times out', async () => {
    server().queue({ hang: true }, { json: invoice });
    const got = await client({ timeoutMs: 200 }).invoices.get('inv_1');
    expect(got.id).toBe('inv_1');
    expect(server().requests).toHaveLength(2);
  });

  it('retries a write with a key that times out, with the same key', async () => {
    server().queue({ hang: true }, { json: customer });
    await client({ timeoutMs: 200 }).customers.create({ username: 'ada' });
    const keys = server().requests.map((r) => r.headers['x-idempotency-key']);
    expect(keys).toHaveLength(2);
    expect(keys[0]).toBe(keys[1]);
  });

  it('a per-call timeoutMs overrides the client default', async () => {
    server().queue({ hang: true });
    await expect(client({ maxRetries: 0 }).invoices.get('inv_1', { timeoutMs: 100 })).rejects.toBeInstanceOf(ApiTimeoutError);
  });

  it('throws ApiConnectionError when the connection is refused (after retrying a GET)', async () => {
    const closed = await listen(createServer());
    await closed.close();
    const refused = createClient({ apiKey: API_KEY, environment: closed.url, rateLimit: false, maxRetries: 1 });
    const error = await refused.invoices.get('inv_1').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiConnectionError);
    expect(error).not.toBeInstanceOf(ApiTimeoutError);
    expect((error as Error).message).toMatch(/GET \/v1\/invoices\/inv_1: could not reach the service \(ECONNREFUSED\)/);
    expect((error as Error).cause).toBeDefined();
  });

  it("stops at once when the caller's signal aborts during a retry wait, with the signal's reason", async () => {
    server().queue({ status: 429, headers: { 'retry-after': '30' }, json: { error: { message: 'slow down' } } });
    const controller = new AbortController();
    const started = Date.now();
    const pending = client().invoices.get('inv_1', { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('shutting down')), 100);
    await expect(pending).rejects.toThrow('shutting down');
    expect(Date.now() - started).toBeLessThan(1000);
    expect(server().requests).toHaveLength(1);
  });

  it("stops at once when the caller's signal aborts a hanging request, and does not retry", async () => {
    server().queue({ hang: true }, { json: invoice });
    const controller = new AbortController();
    const pending = client().invoices.get('inv_1', { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('stop')), 100);
    await expect(pending).rejects.toThrow('stop');
    expect(server().requests).toHaveLength(1);
  });
});
