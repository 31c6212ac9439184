import type { Logger } from 'pino';
import type { BodyBudget } from '../internal/limited-body.js';

/** An HTTP answer whose body is text (JSON for the receiver and the console's API). */
export interface HttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * What a request's body reader gives: its bytes, what a body parser of the app already made of them (Express's
 * `req.body`), `consumed` when something read the stream and left nothing, or the answer that refuses the body
 * (413 over the limit, 400 aborted, 503 when the in-flight budget is spent).
 */
export type RequestBody = { bytes: Buffer } | { parsed: unknown } | { consumed: true } | { refusal: HttpResponse };

/** A request as the adapters (node:http, Express, Fetch) describe it to an {@link HttpHandler}. */
export interface HttpRequest {
  method: string;
  /** The path and query as the client sent them, e.g. `/admin/api/events?status=dead` (in Express, the mount path included). */
  url: string;
  /** Header names lower-case. */
  headers: Record<string, string | string[] | undefined>;
  /**
   * Reads the body, up to the handler's `maxBodyBytes` and inside its `bodyBudget`. Nothing is read until it is
   * called, so a handler can refuse a request (a wrong token) without reading a byte of its body; a second call gets
   * the first call's outcome. It never rejects: an abort or an error is a `refusal`.
   */
  body: () => Promise<RequestBody>;
  /** The address of the connection's other end (never X-Forwarded-For); undefined where the runtime does not say (Fetch). */
  clientAddress: string | undefined;
}

/**
 * A framework-free HTTP handler, which the three adapters of this folder wrap: the receiver (`receiverHandler`)
 * and the console's API (`createAdminApi`).
 */
export interface HttpHandler {
  /** The largest body the adapters read for it; past it they answer 413 without reading on. */
  readonly maxBodyBytes: number;
  /** Bounds the bytes of unfinished bodies held at once, across its requests. */
  readonly bodyBudget?: BodyBudget | undefined;
  /** What a log line calls its requests (`webhook`, `console`). */
  readonly name: string;
  /** Where an adapter logs a `handle` that threw (answered 500). */
  readonly logger?: Logger | undefined;
  /** Answers one request. It may throw: the node:http and Fetch adapters answer 500, Express calls `next(err)`. */
  handle(request: HttpRequest): Promise<HttpResponse>;
}

/** `read` called at most once: later calls get the first call's promise. */
export function readOnce(read: () => Promise<RequestBody>): () => Promise<RequestBody> {
  let reading: Promise<RequestBody> | undefined;
  return () => {
    reading ??= read();
    return reading;
  };
}
