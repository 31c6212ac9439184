import type { z } from 'zod';
import { API_ERROR_STATUSES } from '../events/rest-contract.js';
import { describeIssues, issuesOf } from '../events/issues.js';
import { RouteError, badRequest } from './route-error.js';

/** Who is calling: `sk_test_…` keys are staging, `sk_live_…` production. */
export type KeyEnvironment = 'staging' | 'production';

/** What a route handler gets. */
export interface RouteRequest<Input = unknown, Query = unknown> {
  params: Record<string, string>;
  /** The validated `input` of the body (undefined for routes without one). */
  input: Input;
  /** The validated query. */
  query: Query;
  environment: KeyEnvironment;
  /** The simulator's base URL, for links it hands out. */
  baseUrl: string;
}

/** A route's answer: JSON, or text of another type (the YAML document). */
export type RouteResponse = { status: number; body: unknown } | { status: number; text: string; contentType: string };

/** One operation of the REST interface: what the router runs and what the OpenAPI document describes. */
export interface Route {
  method: 'GET' | 'POST';
  /** The OpenAPI path template, e.g. `/v1/invoices/{invoiceId}`. */
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  /** Served without an API key (the OpenAPI documents). */
  public?: boolean | undefined;
  /** Refused with 403 for production keys, before the body is looked at (the sandbox). */
  stagingOnly?: boolean | undefined;
  /** The schema of `input` in `{"input": …}`; absent: the body is ignored. */
  input?: z.ZodType | undefined;
  /** The body may be left out entirely (mark-paid, whose every field is optional). */
  inputOptional?: boolean | undefined;
  /** The query parameters, each a top-level field. */
  query?: z.ZodObject | undefined;
  /** The schema of a 2xx answer (for the OpenAPI document; tests validate answers with it). */
  response: z.ZodType;
  /** The media type of a 2xx answer. Default `application/json`. */
  contentType?: string | undefined;
  /** Error statuses this operation may answer, besides 401, 429 and 503 which all may. */
  errors: readonly number[];
  /** Matches the path; groups are the parameters in order. */
  pattern: RegExp;
  paramNames: readonly string[];
  /** Validates the parsed body and query, then runs the handler. */
  run(request: {
    params: Record<string, string>;
    body: unknown;
    hasBody: boolean;
    query: URLSearchParams;
    environment: KeyEnvironment;
    baseUrl: string;
  }): Promise<RouteResponse>;
}

/** What {@link defineRoute} takes. */
export interface RouteDefinition<InputSchema extends z.ZodType | undefined, QuerySchema extends z.ZodObject | undefined> {
  method: 'GET' | 'POST';
  path: string;
  operationId: string;
  summary: string;
  tag: string;
  public?: boolean;
  stagingOnly?: boolean;
  input?: InputSchema;
  inputOptional?: boolean;
  query?: QuerySchema;
  response: z.ZodType;
  contentType?: string;
  errors?: readonly number[];
  handle(
    request: RouteRequest<
      InputSchema extends z.ZodType ? z.output<InputSchema> : undefined,
      QuerySchema extends z.ZodObject ? z.output<QuerySchema> : undefined
    >,
  ): RouteResponse | Promise<RouteResponse>;
}

/**
 * Declares one operation. The handler receives `input` and `query` already validated: a body that is not
 * `{"input": …}` or an input or query that fails its schema is a 400 naming every failing path.
 */
export function defineRoute<InputSchema extends z.ZodType | undefined = undefined, QuerySchema extends z.ZodObject | undefined = undefined>(
  definition: RouteDefinition<InputSchema, QuerySchema>,
): Route {
  const paramNames = [...definition.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]!);
  const pattern = new RegExp(`^${definition.path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{\w+\}/g, '([^/]+)')}$`);
  return {
    method: definition.method,
    path: definition.path,
    operationId: definition.operationId,
    summary: definition.summary,
    tag: definition.tag,
    public: definition.public,
    stagingOnly: definition.stagingOnly,
    input: definition.input,
    inputOptional: definition.inputOptional,
    query: definition.query,
    response: definition.response,
    contentType: definition.contentType,
    errors: definition.errors ?? [],
    pattern,
    paramNames,
    async run(request) {
      if (definition.stagingOnly && request.environment !== 'staging') {
        throw new RouteError(
          API_ERROR_STATUSES.permission,
          `${definition.method} ${definition.path} is a staging-only sandbox call: use a staging key (sk_test_…), not a production key (sk_live_…).`,
        );
      }
      const input = definition.input
        ? parseInput(definition.input, request.body, request.hasBody, definition.inputOptional === true)
        : undefined;
      const query = definition.query ? parseQuery(definition.query, request.query) : undefined;
      return definition.handle({
        params: request.params,
        input: input as never,
        query: query as never,
        environment: request.environment,
        baseUrl: request.baseUrl,
      });
    },
  };
}

function parseInput(schema: z.ZodType, body: unknown, hasBody: boolean, optional: boolean): unknown {
  if (!hasBody && optional) return schema.parse({});
  if (typeof body !== 'object' || body === null || Array.isArray(body) || !('input' in body)) {
    throw badRequest('The body must be a JSON object whose fields are wrapped in "input": {"input": {…}}.');
  }
  const parsed = schema.safeParse((body as { input: unknown }).input);
  if (!parsed.success) throw badRequest(`Invalid input: ${describeIssues(issuesOf(parsed.error, 'input'))}`);
  return parsed.data;
}

// Query values arrive as text; whole numbers are turned into numbers so `take=101` fails as "too big",
// while `take=ten` stays text and fails as "expected number".
function parseQuery(schema: z.ZodObject, query: URLSearchParams): unknown {
  const values: Record<string, unknown> = {};
  for (const name of Object.keys(schema.shape)) {
    const value = query.get(name);
    if (value === null) continue;
    values[name] = /^-?\d+$/.test(value) ? Number(value) : value;
  }
  const parsed = schema.safeParse(values);
  if (!parsed.success) throw badRequest(`Invalid query: ${describeIssues(issuesOf(parsed.error))}`);
  return parsed.data;
}
