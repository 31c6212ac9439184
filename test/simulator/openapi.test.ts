import { validate, compileErrors } from '@readme/openapi-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { API_PATHS } from '../../src/events/rest-contract.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';

let simulator: Simulator;
beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());

describe('the OpenAPI document', () => {
  it('/openapi.json and /openapi.yaml are the same document, version 1.0.0, served without a key', async () => {
    const json = await fetch(`${simulator.url}/openapi.json`);
    const yaml = await fetch(`${simulator.url}/openapi.yaml`);
    expect(json.status).toBe(200);
    expect(yaml.status).toBe(200);
    expect(yaml.headers.get('content-type')).toMatch(/yaml/);
    const document = (await json.json()) as { openapi: string; info: { version: string } };
    expect(parse(await yaml.text())).toEqual(document);
    expect(document.openapi).toBe('3.1.0');
    expect(document.info.version).toBe('1.0.0');
  });

  it('is valid OpenAPI 3.1 for @readme/openapi-parser', async () => {
    const document = (await (await fetch(`${simulator.url}/openapi.json`)).json()) as Parameters<typeof validate>[0];
    const result = await validate(document);
    expect(result.valid, result.valid ? '' : compileErrors(result)).toBe(true);
  });

  it('describes every route the simulator serves, and every path of API_PATHS', async () => {
    const document = (await (await fetch(`${simulator.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { operationId: string; security?: unknown[]; requestBody?: unknown }>>;
      components: { securitySchemes: Record<string, { scheme: string }> };
    };
    for (const route of simulator.routes) {
      expect(document.paths[route.path]?.[route.method.toLowerCase()]?.operationId, `${route.method} ${route.path}`).toBe(
        route.operationId,
      );
    }
    const paths = Object.keys(document.paths);
    for (const path of Object.values(API_PATHS))
      expect(
        paths.some((p) => p === path || p.startsWith(`${path}/`)),
        path,
      ).toBe(true);
    expect(document.components.securitySchemes.bearerAuth?.scheme).toBe('bearer');
    expect(document.paths['/openapi.json']?.get?.security).toEqual([]);
    expect(document.paths['/v1/invoices']?.post?.requestBody).toMatchObject({
      required: true,
      content: {
        'application/json': { schema: { required: ['input'], properties: { input: { $ref: '#/components/schemas/CreateInvoiceInput' } } } },
      },
    });
  });
});
