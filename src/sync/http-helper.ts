import { parseRetryAfter } from '../client/retry-after.js';
import { DeadLetterError, RetryLaterError } from '../worker/handler-errors.js';
import { describeUrl } from '../internal/describe-url.js';
import { timerDelay } from '../internal/duration.js';
import { nextEffectKey } from '../internal/effect-scope.js';
import { endHttpClientSpan, failSpan, inHttpClientSpan } from '../internal/tracing.js';
import type { Span } from '@opentelemetry/api';

/** How long a connector's or forward target's request may take, by default. */
export const HTTP_DEFAULT_TIMEOUT_MS = 10_000;

/** The most bytes of a 2xx (or accepted) answer read into `text` by default; the rest is discarded unread. */
export const HTTP_DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024;

/** The longest answer text kept in an error (and so in the event's `lastError`). */
const ANSWER_CHARS = 500;
/** Bytes read of an answer that is an error: enough for ANSWER_CHARS characters of UTF-8 (up to 4 bytes each). */
const ERROR_ANSWER_BYTES = ANSWER_CHARS * 4;

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
  /**
   * The most bytes of a returned answer read into `text` (default 1 MiB); past it the rest is not read and the
   * connection is closed, so a target answering gigabytes costs no memory. An error answer is read up to 2 KB.
   */
  maxResponseBytes?: number | undefined;
}

/** An answer in 2xx, or in `accept`. */
export interface HttpResponse {
  status: number;
  headers: Headers;
  /** The answer's text, at most `maxResponseBytes` of it. */
  text: string;
  /** True when the answer was longer than `maxResponseBytes` and `text` holds only its beginning. */
  truncated: boolean;
  /** The body parsed as JSON; throws when it is not JSON, or was cut at `maxResponseBytes`. */
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

// RFC 9110 field names are tokens; values are visible ASCII, spaces, tabs and obs-text bytes, never CR, LF or NUL
// (a line break would end the header, so fetch refuses it, and every request would fail).
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
// fetch fails the request when given these: it writes the connection's own. (It drops `host` and
// `content-length` silently, so a connector that sends them loses nothing.)
const TRANSPORT_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'expect']);

/**
 * Why a request header cannot be sent as given, in words that never repeat the value (it is often a key);
 * undefined when it can.
 *
 * @example
 * headerProblem('x-api-key', 'abc\r\nInjected: 1') // 'its value holds a line break or another character a header cannot carry (value not shown)'
 */
export function headerProblem(name: string, value: unknown): string | undefined {
  if (!HEADER_NAME.test(name)) return `${JSON.stringify(name)} is not a header name (letters, digits and !#$%&'*+-.^_\`|~ only)`;
  if (TRANSPORT_HEADERS.has(name.toLowerCase())) return `${name} is set by the HTTP client itself and cannot be given`;
  if (typeof value !== 'string') return 'its value must be a string';
  if (!HEADER_VALUE.test(value)) return 'its value holds a line break or another character a header cannot carry (value not shown)';
  return undefined;
}

/**
 * Why `url` cannot be requested because it holds a user name or password (`https://user:pw@host/`): fetch refuses
 * such a URL; undefined when it holds none, or is not a URL at all.
 *
 * @example
 * urlCredentialsProblem('https://erp:pw@erp.example.com/in') // 'holds credentials (user:password@): …'
 */
export function urlCredentialsProblem(url: string): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  if (!parsed.username && !parsed.password) return undefined;
  return 'holds credentials (user:password@), which an HTTP request cannot carry in its URL: give them as a header instead, e.g. headers: { authorization: "Basic …" }';
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
  const defaultTimeout = timerDelay(options.timeoutMs ?? HTTP_DEFAULT_TIMEOUT_MS, 'The HTTP timeout (timeoutMs)');
  return {
    async request(url, request = {}) {
      const timeoutMs = request.timeoutMs === undefined ? defaultTimeout : timerDelay(request.timeoutMs, 'The request timeout (timeoutMs)');
      const hasBody = request.json !== undefined || request.body !== undefined;
      const method = (request.method ?? (hasBody ? 'POST' : 'GET')).toUpperCase();
      const where = `${method} ${describeUrl(url)}`;
      // Refused before fetch, whose own messages would repeat the URL's credentials or the header's value.
      const credentials = urlCredentialsProblem(url);
      if (credentials) throw new DeadLetterError(`${where} was not sent: the URL ${credentials}`);
      // Lower-cased, so that a caller's `Content-Type` replaces the default instead of going out beside it.
      const headers: Record<string, string> = { 'user-agent': options.userAgent ?? 'payhooks' };
      for (const [name, value] of Object.entries(request.headers ?? {})) {
        const problem = headerProblem(name, value);
        if (problem) throw new DeadLetterError(`${where} was not sent: header ${JSON.stringify(name)}: ${problem}`);
        headers[name.toLowerCase()] = value;
      }
      if (request.json !== undefined) headers['content-type'] ??= 'application/json';
      // Inside a `ctx.effect` step, a write without a key of its own carries the step's (the same on every attempt).
      if (method !== 'GET' && method !== 'HEAD' && headers['idempotency-key'] === undefined) {
        const key = await nextEffectKey();
        if (key !== undefined) headers['idempotency-key'] = key;
      }
      const maxResponseBytes = request.maxResponseBytes ?? HTTP_DEFAULT_MAX_RESPONSE_BYTES;
      if (!Number.isSafeInteger(maxResponseBytes) || maxResponseBytes < 0) {
        throw new RangeError(`maxResponseBytes must be a whole number of bytes, 0 or more, not ${String(request.maxResponseBytes)}.`);
      }
      // A client span per request, its context sent in traceparent (docs/tracing.md).
      return inHttpClientSpan(method, url, headers, 0, async (span) => {
        try {
          return await send(url, method, headers, request, timeoutMs, maxResponseBytes, where, options.signal, span);
        } catch (err) {
          // An answer's status is on the span already; no answer: the connection's failure.
          if (!(err instanceof DeadLetterError || err instanceof RetryLaterError || err instanceof HttpStatusError)) failSpan(span, err);
          throw err;
        }
      });
    },
  };
}

/** One request through fetch: the answer, or the error the worker makes of it (see {@link HttpHelper.request}). */
async function send(
  url: string,
  method: string,
  headers: Record<string, string>,
  request: HttpRequest,
  timeoutMs: number,
  maxResponseBytes: number,
  where: string,
  callerSignal: AbortSignal | undefined,
  span: Span,
): Promise<HttpResponse> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = callerSignal ? AbortSignal.any([callerSignal, timeout]) : timeout;
  let response: Response;
  let answer: AnswerHead;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: request.body ?? (request.json !== undefined ? JSON.stringify(request.json) : undefined),
      signal,
      redirect: 'manual',
    });
    endHttpClientSpan(span, response.status);
    const ok = (response.status >= 200 && response.status < 300) || request.accept?.includes(response.status) === true;
    answer = await readHead(response.body, ok ? maxResponseBytes : ERROR_ANSWER_BYTES);
    if (ok) {
      const { text, truncated } = answer;
      return {
        status: response.status,
        headers: response.headers,
        text,
        truncated,
        json: <T>() => {
          if (truncated) throw new SyntaxError(`${where}: the answer is longer than ${text.length} characters read and was not parsed`);
          return JSON.parse(text) as T;
        },
      };
    }
  } catch (err) {
    if (callerSignal?.aborted) throw callerSignal.reason ?? err;
    const reason = timeout.aborted ? `no answer within ${timeoutMs} ms` : describeCause(err);
    throw new HttpConnectionError(`${where} failed: ${reason}`, { cause: err });
  }
  const text = answer.text.slice(0, ANSWER_CHARS);
  const shown = `${where} answered ${response.status}${response.statusText ? ` ${response.statusText}` : ''}${text ? `: ${text}` : ''}${answer.truncated || answer.text.length > ANSWER_CHARS ? '…' : ''}`;
  if (!retryable(response.status))
    throw new DeadLetterError(`${shown} (not retried: a ${response.status} will not change by sending again)`);
  const retryAfterS = parseRetryAfter(response.headers.get('retry-after'));
  if (retryAfterS !== undefined)
    throw new RetryLaterError(`${shown} (retrying after ${retryAfterS} s, as Retry-After asks)`, { afterMs: retryAfterS * 1000 });
  throw new HttpStatusError(shown, response.status);
}

/** The beginning of an answer, and whether there was more. */
interface AnswerHead {
  text: string;
  truncated: boolean;
}

/**
 * Reads at most `maxBytes` of a response body, then cancels the rest: undici then closes the connection instead
 * of reading on, so an answer of any size costs `maxBytes` of memory and the target stops sending.
 */
async function readHead(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<AnswerHead> {
  if (body === null) return { text: '', truncated: false };
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text: decode(chunks, size), truncated: false };
      const room = maxBytes - size;
      if (value.byteLength > room) {
        chunks.push(value.subarray(0, room));
        size += room;
        await reader.cancel().catch(() => undefined);
        return { text: decode(chunks, size), truncated: true };
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } finally {
    reader.releaseLock();
  }
}

/** UTF-8 text of the bytes; a character cut at the end becomes U+FFFD rather than an error. */
function decode(chunks: Uint8Array[], size: number): string {
  return Buffer.concat(chunks, size).toString('utf8');
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
