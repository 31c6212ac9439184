import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { listen } from './servers.js';

/** One request as the test server saw it. */
export interface RecordedRequest {
  method: string;
  /** The path without the query string. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The parsed JSON body; undefined when the body was empty, the raw text when it was not JSON. */
  body: unknown;
  /** Date.now() when the request had been read. */
  at: number;
}

/** What the server answers. */
export interface Reply {
  /** Default 200. */
  status?: number;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is, instead of `json`. */
  text?: string;
  /** Never answer (the connection stays open until the server closes): a hanging service. */
  hang?: boolean;
}

export type Responder = (request: RecordedRequest) => Reply | Promise<Reply>;

/** A scriptable REST server on 127.0.0.1 that records every request. */
export interface ApiServer {
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Answers the next requests, one reply each, before any route. */
  queue(...replies: Reply[]): void;
  /** Answers `METHOD /path` (`:name` segments match anything without a slash) when the queue is empty. */
  route(method: string, pattern: string, responder: Responder | Reply): void;
  /** Forgets routes, queued replies and recorded requests. */
  reset(): void;
  close(): Promise<void>;
}

/**
 * Starts the test server. Unmatched requests get `404 {"error":{"message":"no route for …"}}`.
 *
 * @example
 * const server = await startApiServer();
 * server.route('GET', '/v1/invoices/:id', (req) => ({ json: { id: req.path.split('/')[3], … } }));
 */
export async function startApiServer(): Promise<ApiServer> {
  const requests: RecordedRequest[] = [];
  let queued: Reply[] = [];
  let routes: { method: string; pattern: RegExp; responder: Responder }[] = [];

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const rawBody = Buffer.concat(chunks).toString('utf8');
      const recorded: RecordedRequest = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers: req.headers,
        rawBody,
        body: parseBody(rawBody),
        at: Date.now(),
      };
      requests.push(recorded);
      const next = queued.shift();
      const route = routes.find((r) => r.method === recorded.method && r.pattern.test(recorded.path));
      const pending: Promise<Reply> = next
        ? Promise.resolve(next)
        : route
          ? Promise.resolve(route.responder(recorded))
          : Promise.resolve({ status: 404, json: { error: { message: `no route for ${recorded.method} ${recorded.path}` } } });
      pending
        .then((reply) => send(res, reply))
        .catch((error: unknown) => send(res, { status: 500, json: { error: { message: String(error) } } }));
    });
  });
  const { url, close } = await listen(server);

  return {
    url,
    requests,
    queue(...replies) {
      queued.push(...replies);
    },
    route(method, pattern, responder) {
      const regex = new RegExp(`^${pattern.replace(/:[A-Za-z]+/g, '[^/]+')}$`);
      routes.push({ method, pattern: regex, responder: typeof responder === 'function' ? responder : () => responder });
    },
    reset() {
      requests.length = 0;
      queued = [];
      routes = [];
    },
    close,
  };
}

function parseBody(rawBody: string): unknown {
  if (rawBody === '') return undefined;
  try {
    return JSON.parse(rawBody);
  } catch {
    return rawBody;
  }
}

function send(res: ServerResponse, reply: Reply): void {
  if (reply.hang) return;
  const text = reply.text ?? (reply.json === undefined ? '' : JSON.stringify(reply.json));
  const headers: Record<string, string> = {
    ...(reply.text === undefined && reply.json !== undefined ? { 'content-type': 'application/json' } : {}),
    ...reply.headers,
  };
  res.writeHead(reply.status ?? 200, headers);
  res.end(text);
}
