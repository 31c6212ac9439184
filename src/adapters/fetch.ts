import type { ReceiveResponse, Receiver } from '../receiver/receiver.js';
import { internalError } from './internal-error.js';
import { readRequestBody } from './read-body.js';

/**
 * A Fetch-API handler around a receiver, for Next.js route handlers, Hono, Bun and Deno. It always resolves to a
 * Response: when the receiver throws, a 500 `{"error":{"message":"Internal error."}}`, the error going to the
 * receiver's logger.
 *
 * @example
 * // app/api/webhooks/route.ts
 * export const POST = fetchHandler(receiver);
 */
export function fetchHandler(receiver: Receiver): (request: Request) => Promise<Response> {
  return async (request) => {
    let response: ReceiveResponse;
    try {
      response = await receiveFetch(receiver, request);
    } catch (err) {
      response = internalError(receiver, err, { method: request.method, url: pathOf(request.url) });
    }
    return new Response(response.body, { status: response.status, headers: response.headers });
  };
}

async function receiveFetch(receiver: Receiver, request: Request): Promise<ReceiveResponse> {
  const headers: Record<string, string> = {};
  request.headers.forEach((value, name) => {
    headers[name] = value;
  });
  if (request.method !== 'POST') return receiver.receive({ method: request.method, headers, rawBody: new Uint8Array() });
  // A middleware read the body first (Hono's c.req.json(), say): the bytes are gone, and the receiver's answer
  // says how to mount the route, as it does for Express, instead of a 400 that blames the sender.
  if (request.bodyUsed) return receiver.receive({ method: request.method, headers, rawBody: { bodyAlreadyRead: true } });
  const read = await readRequestBody(request, receiver.maxBodyBytes, receiver.bodyBudget);
  if ('refusal' in read) return read.refusal;
  return receiver.receive({ method: request.method, headers, rawBody: read.body });
}

function pathOf(url: string): string | undefined {
  try {
    return new URL(url).pathname;
  } catch {
    return undefined;
  }
}
