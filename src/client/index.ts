// The API client's public surface; src/index.ts re-exports it.
export { createClient, type ClientOptions } from './create-client.js';
export { ApiClient, type ApiPaths, type ClientEnvironment } from './api-client.js';
export type { ClientLogger, HttpMethod, RequestOptions } from './http-transport.js';
export {
  ApiConnectionError,
  ApiError,
  ApiInputError,
  ApiResponseValidationError,
  ApiTimeoutError,
  AuthenticationError,
  ConflictError,
  makeApiError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  ValidationError,
  type ApiErrorDetails,
  type FieldIssue,
} from './errors.js';
export { createRateLimiter, type RateLimiter, type RateLimiterOptions } from './rate-limiter.js';
export { parseRetryAfter } from './retry-after.js';
export { AuthLinks } from './auth-links.js';
export { CustomerPortal } from './customer-portal.js';
export { Customers } from './customers.js';
export { Invoices } from './invoices.js';
export { Payments } from './payments.js';
export { Sandbox } from './sandbox.js';
export { WebhookEvents } from './webhook-events.js';
export { Webhooks } from './webhooks.js';
