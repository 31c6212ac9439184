import type { ApiErrorBody } from '../events/rest-contract.js';

/** An HTTP answer whose body is JSON text, as the receiver and the simulator write them. */
export interface JsonResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/**
 * The one error answer of payhooks' HTTP surfaces (the receiver and its adapters, the simulator): the service's
 * own shape `{"error":{"message":…}}` (apiErrorBodySchema), so that a client reads both the same way.
 *
 * @example
 * errorResponse(415, 'Content-Type must be application/json.');
 * // { status: 415, headers: { 'content-type': 'application/json; charset=utf-8' }, body: '{"error":{"message":"Content-Type…"}}' }
 */
export function errorResponse(status: number, message: string): JsonResponse {
  const body: ApiErrorBody = { error: { message } };
  return { status, headers: { 'content-type': JSON_CONTENT_TYPE }, body: JSON.stringify(body) };
}
