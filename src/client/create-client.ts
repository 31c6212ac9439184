import { z } from 'zod';
import { API_PATHS, API_RATE_LIMIT_PER_MINUTE } from '../events/rest-contract.js';
import { issuesOf } from '../events/issues.js';
import { ApiClient, type ApiPaths, type ClientEnvironment } from './api-client.js';
import { ApiInputError } from './errors.js';
import { type ApiRequestObservation, HttpTransport, type ClientLogger } from './http-transport.js';
import { createRateLimiter, unlimited, type RateLimiter } from './rate-limiter.js';

/** Options of {@link createClient}. Every default is listed here and applied in one place below. */
export interface ClientOptions {
  /**
   * The organization's secret key, sent as `Authorization: Bearer …`. Must start with `sk_`: `sk_test_…`
   * is a staging key, `sk_live_…` a production key. Required; it never appears in errors or logs.
   */
  apiKey: string;
  /**
   * `'staging'`, `'production'`, or the service's base URL. With a name, the address comes from `baseUrl`,
   * else from the `PAYHOOKS_API_URL` environment variable (the spec publishes no hostnames). With a URL, or
   * when omitted, the environment is read from the key: `sk_live_` production, any other `sk_` key staging.
   * A name that contradicts the key (`staging` with `sk_live_`, `production` with `sk_test_`) is an error.
   */
  environment?: ClientEnvironment | (string & {}) | undefined;
  /** The service's base URL (http or https, may carry a path prefix). Default: `PAYHOOKS_API_URL`. */
  baseUrl?: string | undefined;
  /** The fetch implementation. Default: the global `fetch`. */
  fetch?: typeof fetch | undefined;
  /** Time allowed for each attempt, in ms. Default 30000. */
  timeoutMs?: number | undefined;
  /** Retries after the first attempt (429 always; 5xx, timeouts and connection errors only when replay is safe). Default 2. */
  maxRetries?: number | undefined;
  /** The longest `Retry-After` the client waits out; a longer one throws the `RateLimitError` at once. Default 60000 ms. */
  maxRetryAfterMs?: number | undefined;
  /**
   * The request budget checked before every attempt. Default `{ requestsPerMinute: 1000 }`, kept in this
   * client. Pass a {@link RateLimiter} to share one budget (`createRateLimiter` between clients of a process,
   * `createPostgresRateLimiter` between processes), or `false` for none.
   */
  rateLimit?: { requestsPerMinute: number } | RateLimiter | false | undefined;
  /** A pino logger (or anything with `debug` and `warn`): requests at debug, retries at warn. Default: none. */
  logger?: ClientLogger | undefined;
  /** Called after each HTTP attempt, with its method, status (null without an answer) and duration: for metrics. */
  onRequest?: ((request: ApiRequestObservation) => void) | undefined;
  /** Base paths of resource groups, to override (e.g. `{ payments: '/v1/payment' }`). Default `API_PATHS`. */
  paths?: Partial<ApiPaths> | undefined;
}

const DEFAULTS = {
  timeoutMs: 30_000,
  maxRetries: 2,
  maxRetryAfterMs: 60_000,
  requestsPerMinute: API_RATE_LIMIT_PER_MINUTE,
} as const;

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:';
  } catch {
    return false;
  }
}

const httpUrl = z.string().refine(isHttpUrl, 'must be an http or https URL');
const basePath = z.string().regex(/^\/[^?#]*[^/?#]$/, 'must start with / and end without / (no query)');

const optionsSchema = z.strictObject({
  apiKey: z.unknown(),
  environment: z
    .string()
    .refine(
      (value) => value === 'staging' || value === 'production' || isHttpUrl(value),
      "must be 'staging', 'production' or the service's base URL",
    )
    .optional(),
  baseUrl: httpUrl.optional(),
  fetch: z.custom<typeof fetch>((value) => typeof value === 'function', 'must be a fetch function').optional(),
  timeoutMs: z.number().int().positive().optional(),
  maxRetries: z.number().int().min(0).max(10).optional(),
  maxRetryAfterMs: z.number().int().min(0).optional(),
  rateLimit: z
    .custom<ClientOptions['rateLimit']>(
      (value) =>
        value === false ||
        (typeof value === 'object' && value !== null && 'acquire' in value && typeof value.acquire === 'function') ||
        (typeof value === 'object' &&
          value !== null &&
          'requestsPerMinute' in value &&
          Number.isInteger(value.requestsPerMinute) &&
          Number(value.requestsPerMinute) > 0),
      'must be false, a RateLimiter, or { requestsPerMinute } with a positive integer',
    )
    .optional(),
  logger: z
    .custom<ClientLogger>(
      (value) =>
        typeof value === 'object' &&
        value !== null &&
        'debug' in value &&
        'warn' in value &&
        typeof value.debug === 'function' &&
        typeof value.warn === 'function',
      'must be a logger with debug and warn methods',
    )
    .optional(),
  onRequest: z.custom<ClientOptions['onRequest']>((value) => typeof value === 'function', 'must be a function').optional(),
  paths: z.strictObject(Object.fromEntries(Object.keys(API_PATHS).map((group) => [group, basePath.optional()]))).optional(),
});

/**
 * Makes the typed API client. Options are checked here, so a bad key, address or option fails at start-up
 * with an {@link ApiInputError}, before any request.
 *
 * @example
 * const client = createClient({ apiKey: process.env.PAYHOOKS_API_KEY!, environment: 'staging', baseUrl: 'https://staging.example' });
 * const invoice = await client.invoices.get('inv_5Rk9Lm');
 * for await (const customer of client.customers.iterate()) console.log(customer.username);
 */
export function createClient(options: ClientOptions): ApiClient {
  if (typeof options !== 'object' || options === null) throw new ApiInputError('createClient needs an options object with at least apiKey');
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) throw new ApiInputError('Invalid client options', issuesOf(parsed.error));
  const apiKey = checkApiKey(options.apiKey);

  const { environment, baseUrl } = resolveEnvironment(options, apiKey);
  const rateLimiter =
    options.rateLimit === false
      ? unlimited
      : options.rateLimit !== undefined && 'acquire' in options.rateLimit
        ? options.rateLimit
        : createRateLimiter({ requestsPerWindow: options.rateLimit?.requestsPerMinute ?? DEFAULTS.requestsPerMinute, windowMs: 60_000 });

  const transport = new HttpTransport({
    baseUrl,
    apiKey,
    fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
    timeoutMs: options.timeoutMs ?? DEFAULTS.timeoutMs,
    maxRetries: options.maxRetries ?? DEFAULTS.maxRetries,
    maxRetryAfterMs: options.maxRetryAfterMs ?? DEFAULTS.maxRetryAfterMs,
    rateLimiter,
    logger: options.logger,
    onRequest: options.onRequest,
  });
  const paths: ApiPaths = { ...API_PATHS, ...definedEntries(options.paths ?? {}) };
  return new ApiClient(transport, {
    environment,
    baseUrl,
    paths,
    sandboxAllowed: environment === 'staging' && !apiKey.startsWith('sk_live_'),
  });
}

// The messages describe the key without showing it: it is a secret, and errors end up in logs.
function checkApiKey(apiKey: unknown): string {
  if (typeof apiKey !== 'string' || apiKey.trim() === '') {
    throw new ApiInputError('Invalid client options: apiKey is required (a secret key starting with sk_)');
  }
  if (!apiKey.startsWith('sk_') || apiKey.length <= 3 || /\s/.test(apiKey)) {
    throw new ApiInputError(
      `Invalid client options: apiKey must be a secret key starting with sk_ and without spaces (the value given, ${apiKey.length} characters, is not; publishable or other keys cannot call the API)`,
    );
  }
  return apiKey;
}

function resolveEnvironment(options: ClientOptions, apiKey: string): { environment: ClientEnvironment; baseUrl: string } {
  const given: string | undefined = options.environment;
  const named = given === 'staging' || given === 'production' ? given : undefined;
  const fromKey: ClientEnvironment = apiKey.startsWith('sk_live_') ? 'production' : 'staging';
  if (named === 'staging' && apiKey.startsWith('sk_live_')) {
    throw new ApiInputError(
      "Invalid client options: environment is 'staging' but apiKey is a production key (sk_live_); staging and production keys are issued separately",
    );
  }
  if (named === 'production' && apiKey.startsWith('sk_test_')) {
    throw new ApiInputError(
      "Invalid client options: environment is 'production' but apiKey is a staging key (sk_test_); staging and production keys are issued separately",
    );
  }
  if (options.environment !== undefined && named === undefined && options.baseUrl !== undefined) {
    throw new ApiInputError('Invalid client options: give the base URL either as environment or as baseUrl, not both');
  }

  let baseUrl = named === undefined && options.environment !== undefined ? options.environment : options.baseUrl;
  if (baseUrl === undefined) {
    const fromEnv = process.env.PAYHOOKS_API_URL?.trim();
    if (!fromEnv) {
      throw new ApiInputError(
        "Invalid client options: the service's address must be given, as baseUrl (or environment: '<url>') or in the PAYHOOKS_API_URL environment variable; the spec publishes no hostnames",
      );
    }
    if (!isHttpUrl(fromEnv)) throw new ApiInputError('Invalid PAYHOOKS_API_URL: must be an http or https URL');
    baseUrl = fromEnv;
  }
  return { environment: named ?? fromKey, baseUrl: baseUrl.replace(/\/+$/, '') };
}

function definedEntries(paths: Partial<ApiPaths>): Partial<ApiPaths> {
  return Object.fromEntries(Object.entries(paths).filter(([, value]) => value !== undefined));
}
