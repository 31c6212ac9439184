// The reader of Node request bodies (node:http, Express, the console's API, the simulator): raw-body, a run-time
// dependency, inside the in-flight budget of internal/limited-body.ts. Every outcome settles, over real HTTP.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BodyBudget, type BodyRead, readNodeStream } from '../../src/internal/limited-body.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const LIMIT = 1000;

/** A server whose every request is read with readNodeStream; `outcomes` gets each outcome by path. */
async function readingServer(budget?: BodyBudget) {
  const outcomes = new Map<string, string>();
  const server = await listen(
    createServer((req, res) => {
      void readNodeStream(req, LIMIT, req.headers['content-length'], budget).then((read: BodyRead) => {
        outcomes.set(req.url ?? '', read.ok ? `ok ${read.body.toString()}` : read.failure);
        res.end();
      });
    }),
  );
  return { ...server, port: Number(new URL(server.url).port), outcomes };
}

const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

/** Sends a request head and `body`, leaving the connection open. */
async function send(port: number, path: string, contentLength: number, body: string): Promise<Socket> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => undefined);
  socket.resume();
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: ${contentLength}\r\n\r\n${body}`);
  return socket;
}

describe('the Node body reader', () => {
  it('is raw-body, a run-time dependency of the package', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as Record<string, Record<string, string>>;
    expect(pkg.dependencies?.['raw-body']).toMatch(/^\^3\./);
    expect(pkg.devDependencies?.['raw-body']).toBeUndefined();
    expect(readFileSync(new URL('../../src/internal/limited-body.ts', import.meta.url), 'utf8')).toMatch(
      /^import getRawBody from 'raw-body';$/m,
    );
  });

  it('reads a body whole, refuses one over the limit, and settles a reset connection as aborted', async () => {
    const server = await readingServer();
    try {
      expect((await fetch(`${server.url}/whole`, { method: 'POST', body: 'a'.repeat(LIMIT) })).status).toBe(200);
      expect(server.outcomes.get('/whole')).toBe(`ok ${'a'.repeat(LIMIT)}`);
      // Declared over the limit: refused before a byte is read. Sent without a length: stopped once past it.
      await send(server.port, '/declared', LIMIT + 1, '');
      const chunked = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new Uint8Array(600));
          controller.enqueue(new Uint8Array(600));
          controller.close();
        },
      });
      await fetch(`${server.url}/streamed`, { method: 'POST', body: chunked, duplex: 'half' } as RequestInit).catch(() => undefined);
      const reset = await send(server.port, '/reset', 500, 'abc');
      await waitFor(() => server.outcomes.has('/declared') && server.outcomes.has('/streamed'), 'the refusals');
      reset.resetAndDestroy();
      await waitFor(() => server.outcomes.has('/reset'), 'the reset request to settle');
      expect(Object.fromEntries(server.outcomes)).toMatchObject({
        '/declared': 'too_large',
        '/streamed': 'too_large',
        '/reset': 'aborted',
      });
    } finally {
      await server.close();
    }
  });

  it('settles a body the budget cuts off mid-read as busy, closing its connection, and frees its bytes', async () => {
    const budget = new BodyBudget(1000);
    const server = await readingServer(budget);
    try {
      const big = await send(server.port, '/big', 900, 'b'.repeat(600));
      const closed = new Promise((resolve) => big.once('close', resolve));
      await waitFor(() => budget.heldBytes === 600, 'the first body to be held');
      // 600 + 500 > 1000: the larger body being read gives way, and the smaller one is read whole.
      expect((await fetch(`${server.url}/small`, { method: 'POST', body: 's'.repeat(500) })).status).toBe(200);
      await closed;
      expect(Object.fromEntries(server.outcomes)).toEqual({ '/big': 'busy', '/small': `ok ${'s'.repeat(500)}` });
      expect(budget.heldBytes).toBe(0);
    } finally {
      await server.close();
    }
  });
});
