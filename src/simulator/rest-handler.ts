import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { API_ERROR_STATUSES } from '../events/rest-contract.js';
import { errorResponse } from '../internal/error-response.js';
import { bodyReadRefusal, readNodeStream } from '../internal/limited-body.js';
import { RouteError, badRequest } from './route-error.js';
import type { RecordedResponse } from './idempotency.js';
import type { ResolvedSimulatorOptions } from './options.js';
import { keyEnvironment, type OrganizationRuntime, type Organizations } from './organizations.js';
import { RequestRateWindows } from './request-rate-windows.js';
import { resourceIdsOf, type RequestLog } from './request-log.js';
import type { KeyEnvironment } from './route.js';

/** The largest request body accepted. */
export const MAX_REQUEST_BODY_BYTES = 1024 * 1024;

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const KEY_PATTERN = /^Bearer\s+(sk_(test|live)_\S+)$/i;

/** What {@link createRestHandler} needs. */
export interface RestHandlerOptions {
  /** The organizations; a call runs the route of the one its key belongs to. */
  organizations: Organizations;
  /** Where each call answered to a known key is recorded. */
  requestLog: RequestLog;
  options: ResolvedSimulatorOptions;
  /** The simulator's base URL once it listens. */
  baseUrl: () => string;
}

/** What the pipeline answers: the response and the headers that go with it. */
interface Answer {
  response: RecordedResponse;
  headers: Record<string, string>;
}

/**
 * The request pipeline, in this order: rate limit (429), route (404, 405), `--fail-rate` before the work (503),
 * API key and its organization (401), `X-Idempotency-Key` for writes (per organization), the organization's
 * handler, `--fail-rate` after the work (503, the write done); then the request log.
 */
export function createRestHandler({
  organizations,
  requestLog,
  options,
  baseUrl,
}: RestHandlerOptions): (req: IncomingMessage, res: ServerResponse) => void {
  const rateLimiter = new RequestRateWindows(options.rateLimitPerMinute);
  // Every organization's routes are in the same order: match on the first's, run the same index of the caller's.
  const routes = organizations.first.routes;
  const logger = options.logger;

  async function handle(req: IncomingMessage): Promise<Answer> {
    const method = (req.method ?? 'GET').toUpperCase();
    const url = new URL(req.url ?? '/', 'http://simulator.invalid');
    const path = url.pathname.length > 1 ? url.pathname.replace(/\/+$/, '') : url.pathname;

    const decision = rateLimiter.take(req.socket.remoteAddress ?? 'unknown');
    if (!decision.allowed) {
      return {
        response: errorResponse(
          API_ERROR_STATUSES.rateLimit,
          `Too many requests: at most ${options.rateLimitPerMinute} per minute per IP address. Retry after ${decision.retryAfterSeconds} s.`,
        ),
        headers: { 'retry-after': String(decision.retryAfterSeconds) },
      };
    }

    let params: Record<string, string> = {};
    const onPath = routes.filter((route) => route.pattern.test(path));
    let route = onPath.find((candidate) => candidate.method === method);
    if (onPath.length === 0) return { response: errorResponse(404, `No route ${method} ${path}.`), headers: {} };
    if (!route) {
      const allowed = [...new Set(onPath.map((candidate) => candidate.method))].join(', ');
      return { response: errorResponse(405, `${method} is not allowed on ${path}; use ${allowed}.`), headers: { allow: allowed } };
    }
    const match = route.pattern.exec(path)!;
    params = Object.fromEntries(route.paramNames.map((name, i) => [name, decodeURIComponent(match[i + 1]!)]));

    const rawBody = await readBody(req);
    const isWrite = WRITE_METHODS.has(method);

    let failAfterWrite = false;
    if (!route.public && options.failRate > 0 && options.random() < options.failRate) {
      // Half the simulated failures of a write hit after the work is done: the answer is "lost", the write is not.
      if (isWrite && options.random() < 0.5) failAfterWrite = true;
      else return { response: simulatedFailure(), headers: {} };
    }

    let environment: KeyEnvironment = 'staging';
    let caller: { apiKey: string; organization: OrganizationRuntime } | undefined;
    if (!route.public) {
      const found = callerOf(req.headers.authorization);
      if (!found) return unauthorized(organizations.all.length);
      caller = found;
      environment = keyEnvironment(found.apiKey);
      route = found.organization.routes[routes.indexOf(route)]!;
    }
    const routeToRun = route;

    // A refusal of the handler is an answer like any other, so that an idempotent replay repeats it.
    const execute = async (): Promise<RecordedResponse> => {
      try {
        const body = route.input && rawBody.trim().length > 0 ? parseJson(rawBody) : undefined;
        const result = await routeToRun.run({
          params,
          body,
          hasBody: rawBody.trim().length > 0,
          query: url.searchParams,
          environment,
          baseUrl: baseUrl(),
        });
        if ('text' in result) return { status: result.status, body: result.text, contentType: result.contentType };
        // Serialized now: a replay must answer what the first call answered, not the state at replay time.
        return { status: result.status, body: JSON.stringify(result.body) };
      } catch (err) {
        if (err instanceof RouteError) return errorResponse(err.status, err.message);
        throw err;
      }
    };

    const key = req.headers['x-idempotency-key'];
    const idempotencyKey = Array.isArray(key) ? key[0] : key;
    const { response, replayed } =
      isWrite && idempotencyKey !== undefined && caller
        ? await caller.organization.idempotency.run(idempotencyKey, { method, path, rawBody }, execute)
        : { response: await execute(), replayed: false };
    const answered = failAfterWrite ? simulatedFailure() : response;
    if (caller) {
      requestLog.record({
        at: new Date().toISOString(),
        account: caller.organization.organization.id,
        apiKey: caller.apiKey,
        method,
        path,
        operationId: route.operationId,
        status: answered.status,
        // What the key touched: with a lost answer (failAfterWrite) the write was still done.
        resourceIds: resourceIdsOf({ params, rawBody }, response),
      });
    }
    if (failAfterWrite) return { response: answered, headers: {} };
    return { response, headers: replayed ? { 'idempotent-replayed': 'true' } : {} };
  }

  function callerOf(authorization: string | undefined): { apiKey: string; organization: OrganizationRuntime } | undefined {
    const key = KEY_PATTERN.exec(authorization ?? '');
    const organization = key ? organizations.byKey(key[1]!) : undefined;
    return key && organization ? { apiKey: key[1]!, organization } : undefined;
  }

  return (req, res) => {
    const started = performance.now();
    handle(req)
      .catch((err: unknown): Answer => {
        if (err instanceof RouteError) return { response: errorResponse(err.status, err.message), headers: err.headers };
        logger?.error({ err, method: req.method, path: req.url }, 'simulator request failed');
        return { response: errorResponse(500, 'Internal simulator error.'), headers: {} };
      })
      .then(({ response, headers }) => {
        res.writeHead(response.status, {
          'content-type': response.contentType ?? 'application/json; charset=utf-8',
          'content-length': String(Buffer.byteLength(response.body)),
          ...headers,
        });
        res.end(response.body);
        logger?.info(
          {
            method: req.method,
            path: req.url?.split('?')[0],
            status: response.status,
            durationMs: Math.round(performance.now() - started),
          },
          'request',
        );
      })
      .catch((err: unknown) => logger?.warn({ err }, 'could not write a simulator response'));
  };
}

// One answer for a missing, malformed or unknown key, so that it does not tell which keys exist.
function unauthorized(organizationCount: number): Answer {
  const which =
    organizationCount === 1
      ? 'send Authorization: Bearer sk_test_… (staging) or sk_live_… (production)'
      : "send Authorization: Bearer with one of the organizations' keys (payhooks simulate --accounts prints them; sk_live_ in place of sk_test_ for production)";
  return {
    response: errorResponse(API_ERROR_STATUSES.authentication, `Missing or invalid API key: ${which}.`),
    headers: { 'www-authenticate': 'Bearer' },
  };
}

function simulatedFailure(): RecordedResponse {
  return errorResponse(503, 'Simulated failure (--fail-rate)');
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest('The body is not valid JSON.');
  }
}

/** The body as text; past {@link MAX_REQUEST_BODY_BYTES} a 413 that closes the connection, so the rest is never read. */
async function readBody(req: IncomingMessage): Promise<string> {
  const read = await readNodeStream(req, MAX_REQUEST_BODY_BYTES, req.headers['content-length']);
  if (read.ok) return read.body.toString('utf8');
  const { status, message } = bodyReadRefusal(read.failure, MAX_REQUEST_BODY_BYTES);
  throw new RouteError(status, message, { connection: 'close' });
}
