import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { z } from 'zod';
import { apiErrorBodySchema, type ListPage } from '../events/rest-contract.js';
import { issuesOf } from '../events/issues.js';
import type { Infer } from '../events/primitives.js';
import {
  ApiConnectionError,
  ApiError,
  ApiInputError,
  ApiResponseValidationError,
  ApiTimeoutError,
  makeApiError,
  RateLimitError,
  ServerError,
} from './errors.js';
import { pageSchema } from './pagination.js';
import type { RateLimiter } from './rate-limiter.js';
import { parseRetryAfter } from './retry-after.js';
import { sleep } from '../internal/sleep.js';
import { backoffDelay } from '../internal/backoff.js';
import { nextEffectKey } from '../internal/effect-scope.js';
import { endHttpClientSpan, failSpan, inHttpClientSpan } from '../internal/tracing.js';

/** The methods of the service's REST interface. Everything but GET is a write. */
export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** The logger calls the client makes; a pino logger fits. */
export type ClientLogger = Pick<Logger, 'debug' | 'warn'>;

/** Options of one call, the last argument of every client method. */
export interface RequestOptions {
  /**
   * The `X-Idempotency-Key` of a write. Default: inside a `ctx.effect` step, the step's key (derived from the event,
   * handler and step, so the same on every attempt; `<key>.2`, `.3`… for the step's later writes); elsewhere a
   * random UUID made once per call and sent on every retry of it. Pass your own to make a call idempotent across processes or restarts (e.g. derived from an event id).
   * `false` sends none; such a write is then never retried after a 5xx, a timeout or a connection error,
   * since the service may have processed it. Ignored on reads.
   */
  idempotencyKey?: string | false | undefined;
  /** Aborts the call, including waits for retries and the rate limiter; the call rejects with the signal's reason. */
  signal?: AbortSignal | undefined;
  /** Time allowed for each attempt (not counting waits between them). Default: the client's `timeoutMs`. */
  timeoutMs?: number | undefined;
}

/** The settled configuration of a transport (see `ClientOptions` for meanings and defaults). */
export interface TransportConfig {
  baseUrl: string;
  apiKey: string;
  fetch: typeof fetch;
  timeoutMs: number;
  maxRetries: number;
  maxRetryAfterMs: number;
  rateLimiter: RateLimiter;
  logger?: ClientLogger | undefined;
  onRequest?: ((request: ApiRequestObservation) => void) | undefined;
}

/** One HTTP attempt of the client, for metrics. */
export interface ApiRequestObservation {
  method: string;
  /** The answer's status; null when none came (timeout, connection error). */
  status: number | null;
  seconds: number;
}

/** A value checked with a zod schema before it goes out. */
export interface Checked {
  schema: z.ZodType;
  value: unknown;
}

/** One logical request: the transport makes one or more attempts of it. */
export interface RequestSpec<S extends z.ZodType> {
  method: HttpMethod;
  /** The path, ids already encoded, without the query. */
  path: string;
  /** Query parameters; undefined values are left out. */
  query?: Checked | undefined;
  /** Request fields: checked, then sent as `{"input": …}`. Without it the request has no body. */
  input?: Checked | undefined;
  response: S;
}

const BACKOFF_BASE_MS = 500;
const BACKOFF_CAP_MS = 8000;

/**
 * The one place that does HTTP: bearer key, JSON, `{input}` wrapping, per-attempt timeout, rate limiting,
 * retries with exponential backoff and jitter, idempotency keys, `Retry-After`, typed errors and lenient
 * response checks. Resources describe requests; this runs them.
 */
export class HttpTransport {
  readonly #config: TransportConfig;

  constructor(config: TransportConfig) {
    this.#config = config;
  }

  /** GET `path` and check the body with `response`. */
  get<S extends z.ZodType>(path: string, response: S, options?: RequestOptions): Promise<Infer<S>> {
    return this.request({ method: 'GET', path, response }, options);
  }

  /** POST `input` (checked with `schema`, wrapped in `{input}`) to `path`; without `input`, an empty body. */
  post<S extends z.ZodType>(path: string, input: Checked | undefined, response: S, options?: RequestOptions): Promise<Infer<S>> {
    return this.request({ method: 'POST', path, input, response }, options);
  }

  /** GET one page of a list endpoint; the query is checked first (`take` at most 100). */
  list<S extends z.ZodType>(path: string, item: S, query: Checked, options?: RequestOptions): Promise<ListPage<Infer<S>>> {
    return this.request({ method: 'GET', path, query, response: pageSchema(item) }, options) as Promise<ListPage<Infer<S>>>;
  }

  /** Runs one logical request to completion: attempts, waits and retries, then a typed result or error. */
  async request<S extends z.ZodType>(spec: RequestSpec<S>, options: RequestOptions = {}): Promise<Infer<S>> {
    const { method, path } = spec;
    const timeoutMs = checkCallOptions(options, method, path) ?? this.#config.timeoutMs;
    const body = spec.input === undefined ? undefined : JSON.stringify({ input: check(spec.input, 'input', method, path) });
    const search = spec.query === undefined ? '' : queryString(check(spec.query, 'query', method, path));
    // Inside a `ctx.effect` step, a write without a key of its own is keyed by the step: the same key on every attempt.
    const idempotencyKey =
      method === 'GET' || options.idempotencyKey === false
        ? undefined
        : (options.idempotencyKey ?? (await nextEffectKey()) ?? randomUUID());
    const replayable = method === 'GET' || idempotencyKey !== undefined;

    const headers: Record<string, string> = { authorization: `Bearer ${this.#config.apiKey}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (idempotencyKey !== undefined) headers['x-idempotency-key'] = idempotencyKey;
    const url = this.#config.baseUrl + path + search;

    for (let attempt = 1; ; attempt++) {
      await this.#config.rateLimiter.acquire(options.signal);
      const started = performance.now();
      let json: unknown;
      let status: number;
      try {
        // Each attempt is a client span of its own, carrying its context in traceparent (docs/tracing.md).
        ({ json, status } = await inHttpClientSpan(method, url, headers, attempt - 1, async (span) => {
          try {
            const answer = await this.#attempt(url, { method, headers, body }, timeoutMs, options.signal, method, path);
            endHttpClientSpan(span, answer.status);
            return answer;
          } catch (error) {
            if (error instanceof ApiError && error.status !== undefined) endHttpClientSpan(span, error.status);
            else failSpan(span, error);
            throw error;
          }
        }));
        this.#config.logger?.debug({ method, path, status, attempt, durationMs: elapsed(started) }, 'api request');
        this.#config.onRequest?.({ method, status, seconds: elapsed(started) / 1000 });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        this.#config.onRequest?.({ method, status: error.status ?? null, seconds: elapsed(started) / 1000 });
        this.#config.logger?.debug(
          { method, path, status: error.status, attempt, durationMs: elapsed(started), error: error.name },
          'api request failed',
        );
        const delayMs = this.#retryDelay(error, attempt, replayable);
        if (delayMs === undefined) throw error;
        this.#config.logger?.warn(
          { method, path, status: error.status, attempt, error: error.name, retryInMs: Math.round(delayMs) },
          'api request will be retried',
        );
        await sleep(delayMs, options.signal);
        continue;
      }
      const parsed = spec.response.safeParse(json);
      if (!parsed.success) {
        throw new ApiResponseValidationError(
          `${method} ${path}: the ${status} response does not have the expected shape`,
          issuesOf(parsed.error),
          {
            status,
            method,
            path,
            cause: parsed.error,
          },
        );
      }
      return parsed.data as Infer<S>;
    }
  }

  /** One HTTP exchange; resolves with the JSON of a 2xx answer, throws an ApiError for anything else. */
  async #attempt(
    url: string,
    init: { method: HttpMethod; headers: Record<string, string>; body: string | undefined },
    timeoutMs: number,
    callerSignal: AbortSignal | undefined,
    method: HttpMethod,
    path: string,
  ): Promise<{ json: unknown; status: number }> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout;
    let response: Response;
    let text: string;
    try {
      response = await this.#config.fetch(url, { ...init, signal });
      text = await response.text();
    } catch (error) {
      if (callerSignal?.aborted) throw callerSignal.reason;
      if (timeout.aborted)
        throw new ApiTimeoutError(`${method} ${path}: no response within ${timeoutMs} ms`, { method, path, cause: error });
      throw new ApiConnectionError(`${method} ${path}: could not reach the service (${describeCause(error)})`, {
        method,
        path,
        cause: error,
      });
    }
    const { status, headers } = response;
    if (status >= 200 && status < 300) {
      if (text.trim() === '') return { json: null, status };
      try {
        return { json: JSON.parse(text), status };
      } catch (error) {
        throw new ApiResponseValidationError(`${method} ${path}: the ${status} response is not JSON`, [], {
          status,
          headers,
          method,
          path,
          cause: error,
        });
      }
    }
    throw makeApiError({
      status,
      headers,
      method,
      path,
      serverMessage: errorMessageOf(text),
      retryAfter: parseRetryAfter(headers.get('retry-after')),
    });
  }

  /** How long to wait before the next attempt, or undefined when the error is final. */
  #retryDelay(error: ApiError, attempt: number, replayable: boolean): number | undefined {
    if (attempt > this.#config.maxRetries) return undefined;
    const retryAfter = parseRetryAfter(error.headers?.get('retry-after'));
    if (error instanceof RateLimitError || (replayable && (error instanceof ServerError || error instanceof ApiConnectionError))) {
      if (retryAfter === undefined) return requestRetryDelay(attempt);
      // Waiting longer than this would stall a handler or a worker; the caller decides what to do instead.
      return retryAfter * 1000 <= this.#config.maxRetryAfterMs ? retryAfter * 1000 : undefined;
    }
    return undefined;
  }
}

/** Exponential backoff from 500 ms, doubling, capped at 8 s, each delay drawn from its upper half (jitter). */
export function requestRetryDelay(attempt: number): number {
  return backoffDelay(attempt, { baseMs: BACKOFF_BASE_MS, maxMs: BACKOFF_CAP_MS });
}

function check(checked: Checked, prefix: 'input' | 'query', method: string, path: string): unknown {
  const result = checked.schema.safeParse(checked.value);
  if (result.success) return result.data;
  throw new ApiInputError(`${method} ${path}: invalid ${prefix}, no request was sent`, issuesOf(result.error, prefix), {
    method,
    path,
    cause: result.error,
  });
}

/** Checks the per-call options; returns the call's timeout if it sets one. */
function checkCallOptions(options: RequestOptions, method: string, path: string): number | undefined {
  const { idempotencyKey, timeoutMs } = options;
  if (idempotencyKey !== undefined && idempotencyKey !== false && (typeof idempotencyKey !== 'string' || idempotencyKey.trim() === '')) {
    throw new ApiInputError(`${method} ${path}: idempotencyKey must be a non-empty string or false, no request was sent`, [], {
      method,
      path,
    });
  }
  if (timeoutMs !== undefined && !(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
    throw new ApiInputError(`${method} ${path}: timeoutMs must be a positive number of milliseconds, no request was sent`, [], {
      method,
      path,
    });
  }
  return timeoutMs;
}

function queryString(query: unknown): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query as Record<string, unknown>)) {
    if (value !== undefined && value !== null) params.set(name, String(value));
  }
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

function errorMessageOf(text: string): string | undefined {
  try {
    const parsed = apiErrorBodySchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data.error.message : undefined;
  } catch {
    return undefined;
  }
}

// fetch reports every network failure as TypeError('fetch failed'); the useful part is the cause's code.
function describeCause(error: unknown): string {
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause && typeof cause === 'object' && 'code' in cause && typeof cause.code === 'string') return cause.code;
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}
