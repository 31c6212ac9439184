import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import express from 'express';
import type { Payhooks } from '../../src/payhooks.js';

/** Listens on a free loopback port; resolves to the base URL and a closer. */
export async function listen(server: Server): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A port that was free a moment ago, for a process whose URL must be known before it starts. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export type AdapterName = 'express' | 'node' | 'fetch';
export const ADAPTERS: AdapterName[] = ['express', 'node', 'fetch'];

/** A real HTTP server that hands `/webhooks` to the named adapter of `hooks`. */
export function serverFor(adapter: AdapterName, hooks: Payhooks): Server {
  if (adapter === 'express') {
    const app = express();
    app.all('/webhooks', hooks.express());
    return createServer(app);
  }
  if (adapter === 'node') return createServer((req, res) => void hooks.node()(req, res));
  const handle = hooks.fetch();
  return createServer((req, res) => void bridgeToFetch(req, res, handle));
}

/** What a Fetch-API runtime does: turn the Node request into a Request and write the Response back. */
async function bridgeToFetch(req: IncomingMessage, res: ServerResponse, handle: (request: Request) => Promise<Response>): Promise<void> {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
  const request = new Request(`http://127.0.0.1${req.url}`, {
    method: req.method,
    headers,
    body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : null,
    duplex: 'half',
  } as RequestInit);
  const response = await handle(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  res.end(Buffer.from(await response.arrayBuffer()));
}
