import { parseRetryAfter } from '../client/retry-after.js';
import { DeadLetterError, RetryLaterError } from '../worker/handler-errors.js';
import { describeUrl } from '../internal/describe-url.js';

/** How long a connector's or forward target's request may take, by default. */
export const HTTP_DEFAULT_TIMEOUT_MS = 10_000;

/** The longest answer text kept in an error (and so in the event's `lastError`). */
const ANSWER_CHARS = 500;

/** One request through {@link HttpHelper}. */
export interface HttpRequest {
  /** Default `GET`, or `POST` when `json` or `body` is given. */
  method?: string | undefined;
  /** Sent as JSON with `content-type: application/json`. */
  json?: unknown;
  /** Sent as is (when the body must be exactly these bytes, as a signed body must). */
  body?: string | undefined;
  headers?: Record<string, string> | undefined;
  /** Overrides the helper's timeout for this request. */
  timeoutMs?: number | undefined;
  /** Statuses outside 2xx to return instead of throwing (404 to learn that a record does not exist yet, say). */
  accept?: readonly number[] | undefined;
}

/** An answer in 2xx, or in `accept`. */
export interface HttpResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON; throws when it is not JSON. */
  json<T = unknown>(): T;
}

/** An HTTP client with a timeout whose failures tell the worker what to do with them. */
export interface HttpHelper {
  /**
   * Sends a request. 5xx, 408, 429 and connection failures and timeouts throw errors the worker retries with
   * backoff (a `Retry-After` is honoured through {@link RetryLaterError}); another 4xx throws a
   * {@link DeadLetterError} with the answer, since sending the same request again cannot help.
   *
   * @example
   * const found = await ctx.http.request(`${crm}/contacts/${id}`, { accept: [404] });
   * if (found.status === 404) await ctx.http.request(`${crm}/contacts`, { json: contact });
   */
  request(url: string, request?: HttpRequest): Promise<HttpResponse>;
}

/** A request that got no answer (refused, reset, timed out); the worker retries it. */
export class HttpConnectionError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'HttpConnectionError';
  }
}

/** An answer the worker retries: 5xx, 408, or 429 without a `Retry-After`. */
export class HttpStatusError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'HttpStatusError';
  }
}

function retryable(status: number): boolean {
  return status >= 500 || status === 408 || status === 429;
}

/**
 * Makes an {@link HttpHelper} whose requests end when `signal` aborts (the handler's timeout, or shutdown) or after
 * `timeoutMs`.
 *
 * @example
 * const http = createHttpHelper({ signal: ctx.signal, timeoutMs: 5000 });
 */
export function createHttpHelper(
  options: { signal?: AbortSignal | undefined; timeoutMs?: number | undefined; userAgent?: string } = {},
): HttpHelper {
  const defaultTimeout = options.timeoutMs ?? HTTP_DEFAULT_TIMEOUT_MS;
  return {
    async request(url, request = {}) {
      const timeoutMs = request.timeoutMs ?? defaultTimeout;
      const hasBody = request.json !== undefined || request.body !== undefined;
      const method = (request.method ?? (hasBody ? 'POST' : 'GET')).toUpperCase();
      // Lower-cased, so that a caller's `Content-Type` replaces the default instead of going out beside it.
      const headers: Record<string, string> = { 'user-agent': options.userAgent ?? 'payhooks' };
      for (const [name, value] of Object.entries(request.headers ?? {})) headers[name.toLowerCase()] = value;
      if (request.json !== undefined) headers['content-type'] ??= 'application/json';
      const where = `${method} ${describeUrl(url)}`;
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
      let response: Response;
      let text: string;
      try {
        response = await fetch(url, {
          method,
          headers,
          body: request.body ?? (request.json !== undefined ? JSON.stringify(request.json) : undefined),
          signal,
          redirect: 'manual',
        });
        text = await response.text();
      } catch (err) {
        if (options.signal?.aborted) throw options.signal.reason ?? err;
        const reason = timeout.aborted ? `no answer within ${timeoutMs} ms` : describeCause(err);
        throw new HttpConnectionError(`${where} failed: ${reason}`, { cause: err });
      }
      const ok = (response.status >= 200 && response.status < 300) || request.accept?.includes(response.status) === true;
      if (ok) {
        return {
          status: response.status,
          headers: response.headers,
          text,
          json: <T>() => JSON.parse(text) as T,
        };
      }
      const answer = `${where} answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${text ? `: ${text.slice(0, ANSWER_CHARS)}` : ''}`;
      if (!retryable(response.status))
        throw new DeadLetterError(`${answer} (not retried: a ${response.status} will not change by sending again)`);
      const retryAfterS = parseRetryAfter(response.headers.get('retry-after'));
      if (retryAfterS !== undefined)
        throw new RetryLaterError(`${answer} (retrying after ${retryAfterS} s, as Retry-After asks)`, { afterMs: retryAfterS * 1000 });
      throw new HttpStatusError(answer, response.status);
    },
  };
}

/** The innermost reason of a fetch failure (`ECONNREFUSED`, say), which undici wraps in "fetch failed". */
function describeCause(err: unknown): string {
  let current: unknown = err;
  while (current instanceof Error && current.cause instanceof Error) current = current.cause;
  if (current instanceof Error) {
    const code = (current as NodeJS.ErrnoException).code;
    return code ? `${code}: ${current.message}` : current.message;
  }
  return String(current);
}
