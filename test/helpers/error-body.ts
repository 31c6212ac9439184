import { apiErrorBodySchema } from '../../src/events/rest-contract.js';

/** The message of an error answer, after checking it has the spec's shape `{"error":{"message"}}`. */
export function errorMessage(body: unknown): string {
  return apiErrorBodySchema.parse(body).error.message;
}
