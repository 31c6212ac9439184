import { describe, expect, it } from 'vitest';
import {
  ApiError,
  ApiResponseValidationError,
  AuthenticationError,
  ConflictError,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
  ValidationError,
} from '../../src/client/index.js';
import { PayhooksError } from '../../src/errors.js';
import { invoice, useApiServer } from './support.js';

const { server, client } = useApiServer();

describe('error statuses', () => {
  const statuses: [number, abstract new (...args: never[]) => ApiError][] = [
    [400, ValidationError],
    [401, AuthenticationError],
    [403, PermissionDeniedError],
    [404, NotFoundError],
    [409, ConflictError],
    [422, ValidationError],
    [429, RateLimitError],
    [500, ServerError],
    [503, ServerError],
  ];

  it.each(statuses)('%i maps to %O with the server message, status and headers', async (status, ErrorClass) => {
    const message = `the service says ${status}`;
    server().queue({ status, headers: { 'x-request-id': `req_${status}`, 'retry-after': '7' }, json: { error: { message } } });
    const error = await client({ maxRetries: 0 })
      .invoices.get('inv_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ErrorClass);
    expect(error).toBeInstanceOf(ApiError);
    const apiError = error as ApiError;
    expect(apiError.name).toBe(ErrorClass.name);
    expect(apiError.status).toBe(status);
    expect(apiError.serverMessage).toBe(message);
    expect(apiError).toBeInstanceOf(PayhooksError);
    expect(apiError.message).toBe(`payhooks: GET /v1/invoices/inv_1: ${status} ${message}`);
    expect(apiError.headers?.get('x-request-id')).toBe(`req_${status}`);
    expect(apiError.method).toBe('GET');
    expect(apiError.path).toBe('/v1/invoices/inv_1');
    if (apiError instanceof RateLimitError) expect(apiError.retryAfter).toBe(7);
    expect(server().requests).toHaveLength(1);
  });

  it('an error body that is not the spec shape still gives the right class, with a plain message', async () => {
    server().queue({ status: 502, text: '<html>Bad gateway</html>' });
    const error = await client({ maxRetries: 0 })
      .invoices.get('inv_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ServerError);
    expect((error as ServerError).message).toBe('payhooks: GET /v1/invoices/inv_1: 502 no error message in the response');
  });

  it('an unexpected status is a plain ApiError', async () => {
    server().queue({ status: 418, json: { error: { message: 'teapot' } } });
    const error = await client()
      .invoices.get('inv_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).not.toBeInstanceOf(ValidationError);
    expect((error as ApiError).status).toBe(418);
  });
});

describe('malformed 2xx responses', () => {
  it('a response missing required fields names the failing paths', async () => {
    const { amount: _amount, ...withoutAmount } = invoice;
    server().queue({ json: { ...withoutAmount, items: [{ ...invoice.items[0], currency: 'mxn' }] } });
    const error = await client()
      .invoices.get('inv_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiResponseValidationError);
    const validation = error as ApiResponseValidationError;
    expect(validation.status).toBe(200);
    expect(validation.issues.map((issue) => issue.path).sort()).toEqual(['amount', 'items.0.currency']);
    expect(validation.message).toMatch(/^payhooks: GET \/v1\/invoices\/inv_1: the 200 response does not have the expected shape: /);
    expect(validation.message).toContain('amount');
    expect(validation.message).toContain('items.0.currency');
  });

  it('a list page with a bad item names the item', async () => {
    server().queue({ json: { data: [invoice, { id: 'inv_2' }] } });
    const error = await client()
      .invoices.list()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiResponseValidationError);
    expect((error as ApiResponseValidationError).issues.every((issue) => issue.path.startsWith('data.1.'))).toBe(true);
  });

  it('a body that is not JSON is a clear error, not retried', async () => {
    server().queue({ text: 'OK' }, { json: invoice });
    const error = await client()
      .invoices.get('inv_1')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiResponseValidationError);
    expect((error as Error).message).toBe('payhooks: GET /v1/invoices/inv_1: the 200 response is not JSON');
    expect(server().requests).toHaveLength(1);
  });

  it('an empty body is a clear error', async () => {
    server().queue({ status: 204 });
    await expect(client().invoices.get('inv_1')).rejects.toBeInstanceOf(ApiResponseValidationError);
  });
});
