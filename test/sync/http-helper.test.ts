import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../src/sync/connector.js';
import { createHttpHelper, HttpConnectionError, HttpStatusError } from '../../src/sync/http-helper.js';
import { DeadLetterError, failureVerdict, RetryLaterError } from '../../src/worker/handler-errors.js';
import { freePort, listen } from '../helpers/servers.js';

/** A loopback server that answers `status` with `headers` and `body`, and records what it was sent. */
async function answering(status: number, headers: Record<string, string> = {}, body = '') {
  const seen: { method: string; url: string; headers: Record<string, unknown>; body: string }[] = [];
  const server = await listen(
    createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: text });
        res.writeHead(status, headers).end(body);
      });
    }),
  );
  return { ...server, seen };
}

describe('the HTTP helper of connectors and forward targets', () => {
  it('sends JSON and returns 2xx answers and the statuses it was told to accept', async () => {
    const ok = await answering(201, { 'content-type': 'application/json' }, '{"id":"c_1"}');
    const missing = await answering(404, {}, 'no such contact');
    try {
      const http = createHttpHelper();
      const created = await http.request(`${ok.url}/contacts`, { json: { email: 'a@example.com' } });
      expect(created.status).toBe(201);
      expect(created.json()).toEqual({ id: 'c_1' });
      expect(ok.seen[0]).toMatchObject({ method: 'POST', url: '/contacts', body: '{"email":"a@example.com"}' });
      expect(ok.seen[0]?.headers['content-type']).toBe('application/json');
      expect((await http.request(`${missing.url}/contacts/1`, { accept: [404] })).status).toBe(404);
    } finally {
      await ok.close();
      await missing.close();
    }
  });

  it('classifies failures: another 4xx is a dead letter with the answer, 5xx and 408 retry, Retry-After sets the wait, no answer is a connection error', async () => {
    const http = createHttpHelper({ timeoutMs: 300 });
    const cases = [
      {
        server: await answering(422, {}, '{"message":"amount must be positive"}'),
        type: DeadLetterError,
        text: /answered 422 Unprocessable Entity: \{"message":"amount must be positive"\} \(not retried/,
      },
      { server: await answering(503), type: HttpStatusError, text: /answered 503 Service Unavailable$/ },
      { server: await answering(408), type: HttpStatusError, text: /answered 408/ },
      { server: await answering(429, { 'retry-after': '7' }), type: RetryLaterError, text: /retrying after 7 s, as Retry-After asks/ },
    ];
    try {
      for (const { server, type, text } of cases) {
        const error = await http.request(`${server.url}/x?api_key=secret`).catch((err: unknown) => err);
        expect(error).toBeInstanceOf(type);
        expect((error as Error).message).toMatch(text);
        // The query string may hold credentials; it stays out of errors, which end up in lastError and logs.
        expect((error as Error).message).not.toContain('secret');
      }
      const limited = await http.request(`${cases[3]!.server.url}/x`).catch((err: unknown) => err);
      expect((limited as RetryLaterError).afterMs).toBe(7000);
    } finally {
      for (const { server } of cases) await server.close();
    }
    const refused = await http.request(`http://127.0.0.1:${await freePort()}/`).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(HttpConnectionError);
    expect(String(refused)).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/ failed: ECONNREFUSED/);
    const silent = await listen(createServer(() => undefined));
    try {
      const timedOut = await http.request(silent.url).catch((err: unknown) => err);
      expect(String(timedOut)).toMatch(/failed: no answer within 300 ms$/);
    } finally {
      await silent.close();
    }
  });

  it('ends a request when the handler is aborted, with the abort reason', async () => {
    const silent = await listen(createServer(() => undefined));
    const controller = new AbortController();
    try {
      const pending = createHttpHelper({ signal: controller.signal }).request(silent.url);
      controller.abort(new Error('worker shutting down'));
      await expect(pending).rejects.toThrow('worker shutting down');
    } finally {
      await silent.close();
    }
  });
});

describe('what the failures of one run mean for each handler', () => {
  const fail = (error: unknown, handler = 'h') => ({ handler, error });

  it('a dead letter gives up for its own handler only; on the last attempt every failure gives up', () => {
    const refused = fail(new DeadLetterError('400'), 'forward:refusing');
    const down = fail(new Error('timeout'), 'forward:down');
    expect(failureVerdict([refused], 1, 10, 500, 3_600_000)).toEqual({ givenUp: [refused], retried: [], delayMs: 0 });
    expect(failureVerdict([refused, down], 1, 10, 500, 3_600_000)).toEqual({ givenUp: [refused], retried: [down], delayMs: 500 });
    expect(failureVerdict([refused, down], 10, 10, 500, 3_600_000)).toEqual({ givenUp: [refused, down], retried: [], delayMs: 0 });
  });

  it("waits at least the longest Retry-After asked for, at most the backoff's cap", () => {
    const delay = (failures: { handler: string; error: unknown }[], attempt: number, backoff: number, cap: number) =>
      failureVerdict(failures, attempt, 10, backoff, cap).delayMs;
    expect(delay([fail(new RetryLaterError('429', { afterMs: 1000 })), fail(new Error('x'))], 2, 300, 60_000)).toBe(1000);
    expect(delay([fail(new RetryLaterError('429', { afterMs: 86_400_000 }))], 2, 300, 60_000)).toBe(60_000);
    expect(delay([fail(new RetryLaterError('429', { afterMs: 100 }))], 5, 8000, 60_000)).toBe(8000);
    // A dead letter's own wish does not delay the others.
    expect(delay([fail(new DeadLetterError('400')), fail(new Error('x'))], 1, 300, 60_000)).toBe(300);
  });
});

describe('idempotency keys', () => {
  it('are the same for one consumer and event, and differ across consumers and events', () => {
    const key = idempotencyKey('connector:crm', 'evt_1');
    expect(key).toMatch(/^ph_[0-9a-f]{32}$/);
    expect(idempotencyKey('connector:crm', 'evt_1')).toBe(key);
    expect(idempotencyKey('connector:erp', 'evt_1')).not.toBe(key);
    expect(idempotencyKey('connector:crm', 'evt_2')).not.toBe(key);
  });
});
