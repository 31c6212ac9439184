import { z } from 'zod';
import { buildOpenApiDocument, openApiYaml, type OpenApiDocument } from './openapi.js';
import { defineRoute, type Route } from './route.js';

/** `GET /openapi.json` and `GET /openapi.yaml`: the description of every route, served without a key. */
export function documentRoutes(allRoutes: () => readonly Route[]): Route[] {
  let cached: { baseUrl: string; document: OpenApiDocument } | undefined;
  const documentFor = (baseUrl: string) => {
    if (cached?.baseUrl !== baseUrl) cached = { baseUrl, document: buildOpenApiDocument(allRoutes(), baseUrl) };
    return cached.document;
  };
  return [
    defineRoute({
      method: 'GET',
      path: '/openapi.json',
      operationId: 'getOpenApiJson',
      summary: 'This description, as JSON (OpenAPI 3.1, version 1.0.0).',
      tag: 'Meta',
      public: true,
      response: z.looseObject({ openapi: z.string() }),
      handle: ({ baseUrl }) => ({ status: 200, body: documentFor(baseUrl) }),
    }),
    defineRoute({
      method: 'GET',
      path: '/openapi.yaml',
      operationId: 'getOpenApiYaml',
      summary: 'This description, as YAML.',
      tag: 'Meta',
      public: true,
      response: z.string(),
      contentType: 'application/yaml',
      handle: ({ baseUrl }) => ({ status: 200, text: openApiYaml(documentFor(baseUrl)), contentType: 'application/yaml; charset=utf-8' }),
    }),
  ];
}
