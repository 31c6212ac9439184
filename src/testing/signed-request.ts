import { createDefaultScheme, type SignatureScheme } from '../signature/index.js';
import { parseSecretList } from '../signature/secret-list.js';

/** Options of {@link signedRequest}: `secret`, `scheme`, or both. */
export interface SignedRequestOptions {
  /**
   * The endpoint secret to sign with, read as `createPayhooks({ secret })` reads it: one secret, several
   * separated by commas, or an array. Without `scheme`, the default scheme signs with every secret given (as
   * the service does during a rotation). With `scheme`, a single secret picks which one the scheme signs with.
   */
  secret?: string | readonly string[] | undefined;
  /** The scheme to sign with (e.g. `createStandardWebhooksScheme`). Default: the default scheme over `secret`. */
  scheme?: SignatureScheme | undefined;
  /** The delivery's timestamp: unix seconds or a Date. Default now. An old one tests the receiver's tolerance. */
  timestamp?: number | Date | undefined;
  /** The delivery id, for schemes that sign one (Standard Webhooks' `webhook-id`). Default a random `msg_…` id. */
  webhookId?: string | undefined;
}

/**
 * A delivery as the service would send it. The same object fits `hooks.receive(request)` (it reads `method`,
 * `headers`, `rawBody`) and `fetch(url, request)` (it reads `method`, `headers`, `body`).
 */
export interface SignedRequest {
  readonly method: 'POST';
  /** `content-type: application/json` and the scheme's signature headers, with lower-case names. */
  readonly headers: Record<string, string>;
  /** The JSON text that was signed. */
  readonly body: string;
  /** The same bytes as `body`, as the receiver wants them. */
  readonly rawBody: Uint8Array;
}

/**
 * Signs an event (or a raw body string, sent as is) for a test of webhook handling: the result can be posted to
 * a running endpoint or handed straight to `hooks.receive`.
 *
 * @example
 * import { exampleEvent, signedRequest } from 'payhooks/testing';
 *
 * const hooks = createPayhooks({ secret: 'test-secret', database: { dataDir: 'memory://' } });
 * const response = await hooks.receive(signedRequest(exampleEvent('INVOICE_PAID'), { secret: 'test-secret' }));
 * // response.status === 200
 * await fetch('http://127.0.0.1:3000/webhooks', signedRequest(exampleEvent('INVOICE_PAID'), { secret: 'test-secret' }));
 */
export function signedRequest(event: object | string, options: SignedRequestOptions): SignedRequest {
  if (typeof event !== 'string' && (typeof event !== 'object' || event === null)) {
    throw new TypeError(
      `signedRequest needs an event object or the raw JSON body as a string, not ${event === null ? 'null' : typeof event}.`,
    );
  }
  if (typeof options !== 'object' || options === null) {
    throw new TypeError('signedRequest needs options with the endpoint secret ({ secret }) or a signature scheme ({ scheme }).');
  }
  const body = typeof event === 'string' ? event : JSON.stringify(event);
  const rawBody = Buffer.from(body, 'utf8');
  const timestamp = unixSeconds(options.timestamp);
  const secrets = options.secret === undefined ? [] : parseSecretList(options.secret);
  if (options.secret !== undefined && secrets.length === 0) {
    throw new TypeError('signedRequest was given an empty secret: pass the endpoint secret the receiver is configured with.');
  }

  let signatureHeaders: Record<string, string>;
  if (options.scheme) {
    if (secrets.length > 1) {
      throw new TypeError("With a scheme, signedRequest signs with one secret: pass a single `secret`, or none for the scheme's first.");
    }
    signatureHeaders = options.scheme.sign({ rawBody, timestamp, webhookId: options.webhookId, secret: secrets[0] });
  } else if (secrets.length > 0) {
    // One `v1=` signature per secret in one header, as the sender signs during a rotation's grace period; one
    // timestamp for all, or signatures made across a second boundary would not match the header.
    const scheme = createDefaultScheme({ secrets });
    const at = timestamp ?? Math.floor(Date.now() / 1000);
    const signed = secrets.map((secret) => scheme.sign({ rawBody, timestamp: at, secret }));
    signatureHeaders = { ...signed[0], 'x-webhook-signature': signed.map((headers) => headers['x-webhook-signature']).join(' ') };
  } else {
    throw new TypeError('signedRequest needs the endpoint secret ({ secret }) or a signature scheme ({ scheme }).');
  }
  return { method: 'POST', headers: { 'content-type': 'application/json', ...signatureHeaders }, body, rawBody };
}

function unixSeconds(timestamp: number | Date | undefined): number | undefined {
  if (!(timestamp instanceof Date)) return timestamp;
  const ms = timestamp.getTime();
  if (Number.isNaN(ms)) throw new TypeError('signedRequest: timestamp is an invalid Date.');
  return Math.floor(ms / 1000);
}
