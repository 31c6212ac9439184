import type { Logger } from 'pino';
import { errorResponse } from '../internal/error-response.js';
import { bodyReadRefusal } from '../internal/limited-body.js';
import { assertRawBody, type HeaderMap, type SignatureScheme, WebhookVerificationError } from '../signature/index.js';
import type { DeliveryNote } from './delivery-note.js';
import type { ReceiveRequest, ReceiveResponse } from './receiver.js';

/** What {@link refusalOf} checks a request against. */
export interface RefusalChecks {
  maxBodyBytes: number;
  scheme: SignatureScheme;
  log: Logger | undefined;
  /**
   * The delivery came to an account's own route (`/webhooks/{account}`): a signature that does not hold is answered
   * 404, as an unknown account is, so that the answer does not tell whether the account exists. Otherwise 401.
   */
  accountRoute?: boolean | undefined;
}

/** The answer on an account's route to a delivery that is not that account's (unknown, or not signed with its secret). */
export const NO_SUCH_ENDPOINT = 'No webhook endpoint here takes this delivery.';

/**
 * The answer to a request refused before anything is stored (method, body, media type, signature), or undefined when
 * it is an authentic delivery (`note.verified`). Synchronous and without I/O: the receiver may run it before its span.
 */
export function refusalOf(request: ReceiveRequest, note: DeliveryNote, checks: RefusalChecks): ReceiveResponse | undefined {
  const { maxBodyBytes, scheme, log, accountRoute } = checks;
  if (request.method.toUpperCase() !== 'POST') {
    const refusal = errorResponse(405, 'Only POST is accepted here.');
    return { ...refusal, headers: { ...refusal.headers, allow: 'POST' } };
  }
  const rawBody = request.rawBody;
  try {
    assertRawBody(rawBody);
  } catch (cause) {
    if (!(cause instanceof WebhookVerificationError)) throw cause;
    // A mounting mistake, not a bad delivery: 500 (the sender retries) with the fix, until the route is mounted right.
    log?.error({ reason: cause.reason }, cause.message);
    return errorResponse(500, cause.message);
  }
  if (rawBody.byteLength > maxBodyBytes) {
    const { status, message } = bodyReadRefusal('too_large', maxBodyBytes);
    return errorResponse(status, message);
  }
  if (!isJson(header(request.headers, 'content-type'))) {
    return errorResponse(415, 'Content-Type must be application/json.');
  }

  try {
    scheme.verify({ headers: request.headers, rawBody });
  } catch (cause) {
    if (!(cause instanceof WebhookVerificationError)) throw cause;
    log?.warn({ reason: cause.reason, detail: cause.message }, 'webhook signature rejected');
    note.reason = cause.reason;
    return accountRoute ? errorResponse(404, NO_SUCH_ENDPOINT) : errorResponse(401, cause.publicMessage);
  }
  note.verified = true;
  return undefined;
}

function header(headers: HeaderMap, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : value?.[0];
}

function isJson(contentType: string | undefined): boolean {
  const mediaType = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  return mediaType === 'application/json' || (mediaType?.startsWith('application/') === true && mediaType.endsWith('+json'));
}
