// The API client's errors: one base class carrying what the caller needs to decide (status, headers, the
// server's message), one subclass per status family, and one factory that picks the class. `instanceof`
// is the intended way to branch.

import { PayhooksError } from '../errors.js';
import { describeIssues, type FieldIssue } from '../events/issues.js';

/** One failing field of a request input, a query, an option or a response: a dotted path and why. */
export type { FieldIssue };

/** What an {@link ApiError} knows about the request that failed. */
export interface ApiErrorDetails {
  status?: number | undefined;
  headers?: Headers | undefined;
  method?: string | undefined;
  /** The request path without its query string. */
  path?: string | undefined;
  /** The text of the `{"error":{"message":…}}` body, when the service sent one. */
  serverMessage?: string | undefined;
  cause?: unknown;
}

/**
 * The base of every error the API client throws. `status` and `headers` are set when the service answered;
 * they are undefined for failures without a response (connection, timeout) and for checks made before any
 * request ({@link ApiInputError}).
 */
export class ApiError extends PayhooksError {
  readonly status: number | undefined;
  readonly headers: Headers | undefined;
  readonly method: string | undefined;
  readonly path: string | undefined;
  /** The service's own message, without the method and path this error's `message` starts with. */
  readonly serverMessage: string | undefined;

  constructor(message: string, details: ApiErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.status = details.status;
    this.headers = details.headers;
    this.method = details.method;
    this.path = details.path;
    this.serverMessage = details.serverMessage;
  }
}

/** 400 or 422: the service rejected the request's content. */
export class ValidationError extends ApiError {}
/** 401: missing, malformed or revoked API key. */
export class AuthenticationError extends ApiError {}
/** 403: the key may not do this (e.g. the sandbox in production). */
export class PermissionDeniedError extends ApiError {}
/** 404: unknown id or path. */
export class NotFoundError extends ApiError {}
/** 409: a uniqueness rule (username, email, phone), an idempotency key reused with another body, or a resource in the wrong state. */
export class ConflictError extends ApiError {}

/** 429: over the service's request rate, after the client's retries (or with a `Retry-After` too long to wait). */
export class RateLimitError extends ApiError {
  /** Seconds the service asked to wait (`Retry-After`, either form); undefined when it gave none. */
  readonly retryAfter: number | undefined;

  constructor(message: string, details: ApiErrorDetails & { retryAfter?: number | undefined } = {}) {
    super(message, details);
    this.retryAfter = details.retryAfter;
  }
}

/** 5xx: trouble on the service's side, after the client's retries (or a write that could not be retried safely). */
export class ServerError extends ApiError {}

/** No response: the connection failed (refused, reset, DNS). */
export class ApiConnectionError extends ApiError {}

/** No response within `timeoutMs`. The request may or may not have been processed. */
export class ApiTimeoutError extends ApiConnectionError {}

/** Refused by the client before any request: a bad option, key, id, input field or query value. */
export class ApiInputError extends ApiError {
  readonly issues: readonly FieldIssue[];

  constructor(message: string, issues: readonly FieldIssue[] = [], details: ApiErrorDetails = {}) {
    super(issues.length === 0 ? message : `${message}: ${describeIssues(issues)}`, details);
    this.issues = issues;
  }
}

/** A 2xx response whose body is not JSON or does not match the expected schema. */
export class ApiResponseValidationError extends ApiError {
  readonly issues: readonly FieldIssue[];

  constructor(message: string, issues: readonly FieldIssue[], details: ApiErrorDetails = {}) {
    super(issues.length === 0 ? message : `${message}: ${describeIssues(issues)}`, details);
    this.issues = issues;
  }
}

/**
 * The one mapping from an HTTP error status to its error class.
 *
 * @example
 * throw makeApiError({ status: 404, method: 'GET', path: '/v1/invoices/inv_1', serverMessage: 'Invoice not found' });
 */
export function makeApiError(details: ApiErrorDetails & { status: number; retryAfter?: number | undefined }): ApiError {
  const { status, method, path, serverMessage } = details;
  const message = `${method ?? 'request'} ${path ?? ''}: ${status} ${serverMessage ?? 'no error message in the response'}`;
  if (status === 400 || status === 422) return new ValidationError(message, details);
  if (status === 401) return new AuthenticationError(message, details);
  if (status === 403) return new PermissionDeniedError(message, details);
  if (status === 404) return new NotFoundError(message, details);
  if (status === 409) return new ConflictError(message, details);
  if (status === 429) return new RateLimitError(message, details);
  if (status >= 500) return new ServerError(message, details);
  return new ApiError(message, details);
}
