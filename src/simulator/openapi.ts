import { z } from 'zod';
import { stringify } from 'yaml';
import {
  apiCustomerSchema,
  apiErrorBodySchema,
  apiInvoiceSchema,
  apiPaymentSchema,
  webhookEndpointSchema,
  webhookEventRecordSchema,
} from '../events/rest-contract.js';
import type { Route } from './route.js';

/** The version the spec gives the machine-readable description. */
export const OPENAPI_DOCUMENT_VERSION = '1.0.0';

/** An OpenAPI 3.1 document, as plain JSON. */
export type OpenApiDocument = {
  openapi: string;
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, unknown>>;
} & Record<string, unknown>;

type JsonSchema = Record<string, unknown>;

// Schemas shared by several operations get one named component; the others are named after their operation.
const SHARED_SCHEMAS = new Map<z.ZodType, string>([
  [apiCustomerSchema, 'Customer'],
  [apiInvoiceSchema, 'Invoice'],
  [apiPaymentSchema, 'Payment'],
  [webhookEndpointSchema, 'WebhookEndpoint'],
  [webhookEventRecordSchema, 'WebhookEventRecord'],
]);

const ERROR_RESPONSES: Record<number, { name: string; description: string }> = {
  400: {
    name: 'BadRequest',
    description: 'The body is not `{"input": …}` JSON, or the input or query fails its schema; the message names each failing path.',
  },
  401: { name: 'Unauthorized', description: 'No API key, or not a `sk_test_…` / `sk_live_…` key.' },
  403: { name: 'Forbidden', description: 'Not allowed with this key (the sandbox with a production key).' },
  404: { name: 'NotFound', description: 'No resource with this id.' },
  409: {
    name: 'Conflict',
    description: 'A unique field repeated, an idempotency key reused for another request, or a resource in the wrong state.',
  },
  429: { name: 'TooManyRequests', description: 'Over the request rate per IP; wait `Retry-After` seconds.' },
  503: { name: 'ServiceUnavailable', description: 'A transient failure; retry, with the same `X-Idempotency-Key` for writes.' },
};
const COMMON_ERRORS = [401, 429, 503];

/** Converts a zod schema to the JSON Schema 2020-12 that OpenAPI 3.1 embeds. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any' }) as JsonSchema;
  return rest;
}

function pascal(operationId: string): string {
  return operationId.charAt(0).toUpperCase() + operationId.slice(1);
}

/**
 * The OpenAPI 3.1 description of the simulated interface, generated from the routes and the zod schemas of the
 * wire contract (src/events/rest-contract.ts, and src/simulator/sandbox-contract.ts for the simulator's own sandbox
 * calls): request bodies `{input: …}` from the input schemas, answers from the
 * response schemas, every error answer the `{"error":{"message"}}` body.
 *
 * @example
 * const document = buildOpenApiDocument(routes, 'http://127.0.0.1:4010');
 */
export function buildOpenApiDocument(routes: readonly Route[], serverUrl?: string): OpenApiDocument {
  const schemas: Record<string, JsonSchema> = { Error: jsonSchema(apiErrorBodySchema, 'output') };
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  const component = (schema: z.ZodType, fallbackName: string, io: 'input' | 'output') => {
    const name = SHARED_SCHEMAS.get(schema) ?? fallbackName;
    schemas[name] ??= jsonSchema(schema, io);
    return ref(name);
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const name = pascal(route.operationId);
    const parameters = [
      ...route.paramNames.map((param) => ({ name: param, in: 'path', required: true, schema: { type: 'string' } })),
      ...Object.entries(route.query?.shape ?? {}).map(([param, schema]) => ({
        name: param,
        in: 'query',
        required: false,
        schema: jsonSchema(schema as z.ZodType, 'input'),
      })),
      ...(route.method === 'POST' && !route.public ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
    ];
    const errors = route.public ? [429] : [...new Set([...route.errors, ...COMMON_ERRORS])].sort();
    const responses: Record<string, unknown> = {
      200: {
        description: 'OK',
        content: { [route.contentType ?? 'application/json']: { schema: component(route.response, `${name}Response`, 'output') } },
      },
    };
    for (const status of errors) responses[status] = { $ref: `#/components/responses/${ERROR_RESPONSES[status]!.name}` };
    const operation: Record<string, unknown> = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      ...(parameters.length ? { parameters } : {}),
      ...(route.input
        ? {
            requestBody: {
              required: route.inputOptional !== true,
              content: {
                'application/json': {
                  schema: { type: 'object', properties: { input: component(route.input, `${name}Input`, 'input') }, required: ['input'] },
                },
              },
            },
          }
        : {}),
      responses,
      ...(route.public ? { security: [] } : {}),
    };
    paths[route.path] ??= {};
    paths[route.path]![route.method.toLowerCase()] = operation;
  }

  const responses: Record<string, unknown> = {};
  for (const { name, description } of Object.values(ERROR_RESPONSES)) {
    responses[name] = { description, content: { 'application/json': { schema: ref('Error') } } };
  }
  (responses.TooManyRequests as Record<string, unknown>).headers = {
    'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  };

  return {
    openapi: '3.1.0',
    info: {
      title: 'Payment Collection Service (payhooks simulator)',
      version: OPENAPI_DOCUMENT_VERSION,
      description:
        "The REST interface of the Payment Collection Service as the payhooks simulator emulates it. Shapes the spec does not show are payhooks' documented assumptions (src/events/rest-contract.ts). Operations whose summary starts with 'Simulator only' (tag Sandbox, and outcome FAILED of the sandbox completion) exist only in the simulator, so that every event type can be caused through its state (src/simulator/sandbox-contract.ts).",
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    security: [{ bearerAuth: [] }],
    tags: [...new Set(routes.map((route) => route.tag))].map((tag) => ({ name: tag })),
    paths,
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description: 'An organization API key: `sk_test_…` (staging) or `sk_live_…` (production).',
        },
      },
      parameters: {
        IdempotencyKey: {
          name: 'X-Idempotency-Key',
          in: 'header',
          required: false,
          description: 'One value per logical write, reused when retrying it: the same key and body answer the first response again.',
          schema: { type: 'string', minLength: 1, maxLength: 255 },
        },
      },
      responses,
      schemas,
    },
  };
}

/** The same document as YAML. */
export function openApiYaml(document: OpenApiDocument): string {
  return stringify(document, { aliasDuplicateObjects: false });
}
