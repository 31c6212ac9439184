import http from 'node:http';
import https from 'node:https';
import { createDefaultScheme, createStandardWebhooksScheme } from '../signature/index.js';
import { postDelivery } from './post-delivery.js';

/** The signing schemes {@link sendSigned} knows: the service's default and Standard Webhooks. */
export type SendScheme = 'default' | 'standard-webhooks';

/** What {@link signBody} and {@link sendSigned} sign. */
export interface SendSignedOptions {
  /** The exact bytes to send (a string is sent as UTF-8). */
  body: string | Uint8Array;
  /** The endpoint secret the receiver verifies with (`whsec_…` for Standard Webhooks). */
  secret: string;
  /** Default `default` (the service's `X-Webhook-Timestamp` / `X-Webhook-Signature: v1=<hex>`). */
  scheme?: SendScheme | undefined;
  /** Unix seconds to sign with. Default now. */
  timestamp?: number | undefined;
}

/** The answer to {@link sendSigned}: the receiver's status (null without an answer) and the start of its body. */
export interface SendSignedResult {
  status: number | null;
  ok: boolean;
  body: string;
  error: string | null;
  /** The headers that were sent, signature included. */
  headers: Record<string, string>;
}

/**
 * The headers that sign `body` as the service would: `content-type: application/json` and the scheme's timestamp
 * and signature headers. Throws a TypeError for an empty secret or an unknown scheme.
 *
 * @example
 * signBody({ body: '{"eventId":"evt_1","eventType":"INVOICE_PAID","data":{}}', secret });
 */
export function signBody(options: SendSignedOptions): Record<string, string> {
  const scheme = options.scheme ?? 'default';
  if (typeof options.secret !== 'string' || options.secret.trim() === '') throw new TypeError('The secret is empty.');
  if (scheme !== 'default' && scheme !== 'standard-webhooks') {
    throw new TypeError(`The scheme is default or standard-webhooks, not ${JSON.stringify(scheme)}.`);
  }
  const signer =
    scheme === 'default' ? createDefaultScheme({ secrets: [options.secret] }) : createStandardWebhooksScheme({ secrets: [options.secret] });
  return { 'content-type': 'application/json', ...signer.sign({ rawBody: options.body, timestamp: options.timestamp }) };
}

/**
 * Signs any body with the service's scheme (or Standard Webhooks) and POSTs it to a receiver: a payload captured
 * in production, a hand-edited one, a file of tests. Resolves with the answer, never rejects for the receiver's
 * sake (a refused connection comes back with `status` null and `error`).
 *
 * @example
 * const result = await sendSigned({ url: 'http://127.0.0.1:8787/webhooks', body: await readFile('event.json'), secret });
 */
export async function sendSigned(options: SendSignedOptions & { url: string; timeoutMs?: number | undefined }): Promise<SendSignedResult> {
  const headers = { ...signBody(options), 'user-agent': 'payhooks-send/1.0' };
  const agents = { http: new http.Agent(), https: new https.Agent() };
  try {
    const outcome = await postDelivery({
      url: options.url,
      headers,
      body: options.body,
      timeoutMs: options.timeoutMs ?? 10_000,
      signal: new AbortController().signal,
      agents,
    });
    const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
    return { status: outcome.status, ok, body: outcome.body, error: outcome.error, headers };
  } finally {
    agents.http.destroy();
    agents.https.destroy();
  }
}
