import { createServer, type IncomingMessage } from 'node:http';
import { listen } from '../helpers/servers.js';

/** One answer of the simulator. */
export interface ApiAnswer {
  status: number;
  body: unknown;
  headers: Headers;
}

/** A tiny REST caller (the real client is written elsewhere): `{input}` bodies, a bearer key. */
export function api(baseUrl: string, key: string | null = 'sk_test_simulator') {
  async function call(
    method: string,
    path: string,
    options: { input?: unknown; body?: string; headers?: Record<string, string> } = {},
  ): Promise<ApiAnswer> {
    const headers: Record<string, string> = { ...(key ? { authorization: `Bearer ${key}` } : {}), ...options.headers };
    let body = options.body;
    if (options.input !== undefined) body = JSON.stringify({ input: options.input });
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(`${baseUrl}${path}`, { method, headers, body });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON (the YAML document)
    }
    return { status: response.status, body: parsed, headers: response.headers };
  }
  return {
    call,
    get: (path: string, headers?: Record<string, string>) => call('GET', path, { headers }),
    post: (path: string, input?: unknown, headers?: Record<string, string>) => call('POST', path, { input, headers }),
  };
}

/** A plain loopback receiver that records each POST and answers with `respond` (default 200). */
export async function recordingReceiver(respond: (request: { count: number; body: string }) => number = () => 200) {
  const received: { at: number; body: string; headers: IncomingMessage['headers'] }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ at: performance.now(), body, headers: req.headers });
      const status = respond({ count: received.length, body });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(status < 300 ? '{"received":true}' : '{"error":{"message":"try again"}}');
    });
  });
  const { url, close } = await listen(server);
  return { url: `${url}/webhooks`, received, close };
}

/** Registers a webhook endpoint and returns its id and secret. */
export async function registerEndpoint(
  baseUrl: string,
  url: string,
  enabledEvents: readonly string[],
): Promise<{ id: string; secret: string }> {
  const client = api(baseUrl);
  const created = await client.post('/v1/webhooks', { url, description: 'test receiver', enabledEvents });
  if (created.status !== 200) throw new Error(`could not register the endpoint: ${JSON.stringify(created.body)}`);
  const id = (created.body as { id: string }).id;
  const secret = await client.get(`/v1/webhooks/${id}/secret`);
  return { id, secret: (secret.body as { secret: string }).secret };
}
