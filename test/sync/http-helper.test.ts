import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { idempotencyKey } from '../../src/sync/connector.js';
import { createHttpHelper, HTTP_DEFAULT_MAX_RESPONSE_BYTES, HttpConnectionError, HttpStatusError } from '../../src/sync/http-helper.js';
import { DeadLetterError, failureVerdict, RetryLaterError } from '../../src/worker/handler-errors.js';
import { freePort, listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';
import { hugeAnswer } from '../helpers/huge-answer.js';

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

describe('answers and requests the helper must not take whole or send as given', () => {
  // 128 MB per answer: the four targets of the report answered 500 MB each and took serve to 3.8 GB.
  const HUGE = 128 * 1024 * 1024;

  it('reads the first part of a huge error answer into the error, then closes the connection instead of reading on', {
    timeout: 60_000,
  }, async () => {
    const target = await hugeAnswer(500, HUGE);
    try {
      const error = await createHttpHelper()
        .request(`${target.url}/in`, { json: {} })
        .catch((err: unknown) => err);
      await waitFor(() => target.sent.closed, 'the target to see its connection closed');
      // The target could not write its whole answer: the client stopped reading after a few KB, and what is in
      // flight is only what the sockets' buffers took on the way.
      expect(target.sent.finished).toBe(false);
      expect(target.sent.bytes).toBeLessThan(32 * 1024 * 1024);
      expect(error).toBeInstanceOf(HttpStatusError);
      const message = (error as Error).message;
      expect(message).toMatch(/^POST http:\/\/127\.0\.0\.1:\d+\/in answered 500 Internal Server Error: BEGIN-OF-ANSWER x+…$/);
      expect(message.length).toBeLessThan(700);
    } finally {
      await target.close();
    }
  });

  it('returns at most maxResponseBytes of a huge 2xx answer, marked truncated, and closes the connection', {
    timeout: 60_000,
  }, async () => {
    const target = await hugeAnswer(200, HUGE);
    try {
      const answer = await createHttpHelper().request(target.url);
      await waitFor(() => target.sent.closed, 'the target to see its connection closed');
      expect(target.sent.finished).toBe(false);
      expect(target.sent.bytes).toBeLessThan(32 * 1024 * 1024);
      expect(answer.status).toBe(200);
      expect(answer.truncated).toBe(true);
      expect(answer.text).toHaveLength(HTTP_DEFAULT_MAX_RESPONSE_BYTES);
      expect(answer.text.startsWith('BEGIN-OF-ANSWER x')).toBe(true);
      expect(() => answer.json()).toThrow(/the answer is longer than \d+ characters read and was not parsed/);

      const small = await createHttpHelper().request(target.url, { maxResponseBytes: 10 });
      expect(small).toMatchObject({ text: 'BEGIN-OF-A', truncated: true });
    } finally {
      await target.close();
    }
  });

  it('refuses a URL with credentials and a header that cannot be sent, without repeating either secret', async () => {
    const server = await answering(200);
    try {
      const http = createHttpHelper();
      const port = new URL(server.url).port;
      const withCredentials = await http.request(`http://erp:hunter2pw@127.0.0.1:${port}/in`).catch((err: unknown) => err);
      expect(withCredentials).toBeInstanceOf(DeadLetterError);
      expect(String(withCredentials)).toMatch(
        /GET http:\/\/127\.0\.0\.1:\d+\/in was not sent: the URL holds credentials \(user:password@\)/,
      );
      expect(String(withCredentials)).not.toContain('hunter2pw');
      const badHeader = await http
        .request(server.url, { headers: { 'x-api-key': 'key-hunter2\r\nx-injected: 1' } })
        .catch((err: unknown) => err);
      expect(badHeader).toBeInstanceOf(DeadLetterError);
      expect(String(badHeader)).toMatch(
        /header "x-api-key": its value holds a line break or another character a header cannot carry \(value not shown\)/,
      );
      expect(String(badHeader)).not.toContain('hunter2');
      expect(server.seen).toHaveLength(0);
    } finally {
      await server.close();
    }
  });

  it('refuses a timeout a timer cannot hold, instead of aborting every request after a millisecond', async () => {
    const thirtyDays = 30 * 86_400_000;
    expect(() => createHttpHelper({ timeoutMs: thirtyDays })).toThrow(
      /The HTTP timeout \(timeoutMs\) must be a number of milliseconds from 1 to 2147483647 .*not 2592000000/,
    );
    await expect(createHttpHelper().request('http://127.0.0.1:9/', { timeoutMs: thirtyDays })).rejects.toThrow(RangeError);
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
