import { API_ERROR_STATUSES } from '../events/rest-contract.js';

/** A REST failure: its status, the message of the `{"error":{"message"}}` body, and extra headers. */
export class RouteError extends Error {
  override readonly name = 'RouteError';
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** 404 for an id that names nothing. */
export function notFound(what: string, id: string): RouteError {
  return new RouteError(API_ERROR_STATUSES.notFound, `No ${what} with id ${JSON.stringify(id)}.`);
}

/** 409: a uniqueness rule, an idempotency key reused, or a resource in the wrong state. */
export function conflict(message: string): RouteError {
  return new RouteError(API_ERROR_STATUSES.conflict, message);
}

/** 400: input that fails its schema or a rule of the service. */
export function badRequest(message: string): RouteError {
  return new RouteError(API_ERROR_STATUSES.validation, message);
}
