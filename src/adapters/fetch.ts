import { error, type ReceiveResponse, tooLarge, type Receiver } from '../receiver/receiver.js';

/**
 * A Fetch-API handler around a receiver, for Next.js route handlers, Hono, Bun and Deno.
 *
 * @example
 * // app/api/webhooks/route.ts
 * export const POST = fetchHandler(receiver);
 */
export function fetchHandler(receiver: Receiver): (request: Request) => Promise<Response> {
  return async (request) => {
    const headers: Record<string, string> = {};
    request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    let response: ReceiveResponse;
    if (request.method !== 'POST') {
      response = await receiver.receive({ method: request.method, headers, rawBody: new Uint8Array() });
    } else {
      const read = await readLimited(request, receiver.maxBodyBytes);
      response = read instanceof Uint8Array ? await receiver.receive({ method: request.method, headers, rawBody: read }) : read;
    }
    return new Response(response.body, { status: response.status, headers: response.headers });
  };
}

/** Reads the body chunk by chunk and gives up, cancelling the stream, once it passes the limit. */
async function readLimited(request: Request, limit: number) {
  const declared = Number(request.headers.get('content-length') ?? NaN);
  // Refused before reading a byte; the runtime decides what becomes of the unread body.
  if (declared > limit) return tooLarge(limit);
  if (!request.body) return new Uint8Array();
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = request.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => undefined);
        return tooLarge(limit);
      }
      chunks.push(value);
    }
  } catch {
    return error(400, 'The request body could not be read.');
  }
  return Buffer.concat(chunks, size);
}
