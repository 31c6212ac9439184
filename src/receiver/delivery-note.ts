import type { Span } from '@opentelemetry/api';
import { JSON_CONTENT_TYPE } from '../internal/error-response.js';
import { markSpanFailed } from '../internal/tracing.js';
import type { DeliveryObservation, ReceiveRequest, ReceiveResponse } from './receiver.js';

/** What {@link createReceiver}'s `receive` learns along the way, for {@link DeliveryObservation}. */
export interface DeliveryNote {
  /** The account whose route it came to (the default account's for the plain route). */
  account?: string;
  /** It came to the route of an account that is not configured (answered 404). */
  unknownAccount?: boolean;
  /** The signature was checked and holds. */
  verified?: boolean;
  eventId?: string;
  eventType?: string;
  reason?: string;
  duplicate?: boolean;
  quarantined?: boolean;
}

/**
 * The receive span's attributes: OpenTelemetry's HTTP names where they exist, the rest under `payhooks.*`. 5xx sets the
 * span's status to error (a 4xx is the sender's mistake, as the HTTP conventions have it for a server).
 */
export function describeReceipt(
  span: Span,
  request: ReceiveRequest,
  response: ReceiveResponse,
  outcome: DeliveryObservation['outcome'],
  note: DeliveryNote,
): void {
  span.setAttribute('http.request.method', request.method.toUpperCase());
  span.setAttribute('http.response.status_code', response.status);
  if (request.rawBody instanceof Uint8Array) span.setAttribute('http.request.body.size', request.rawBody.byteLength);
  span.setAttribute('payhooks.delivery.outcome', outcome);
  if (note.reason !== undefined) span.setAttribute('payhooks.signature.outcome', note.reason);
  else if (note.verified) span.setAttribute('payhooks.signature.outcome', 'verified');
  if (note.eventId !== undefined) span.setAttribute('messaging.message.id', note.eventId);
  if (note.eventType !== undefined) span.setAttribute('payhooks.event.type', note.eventType);
  if (note.account !== undefined && !note.unknownAccount) span.setAttribute('payhooks.account', note.account);
  if (response.status >= 500) markSpanFailed(span, String(response.status));
}

/** What became of a request, from its answer and what was learnt on the way. */
export function outcomeOf(status: number, note: DeliveryNote): DeliveryObservation['outcome'] {
  if (status === 200) return note.duplicate ? 'duplicate' : 'stored';
  if (note.unknownAccount) return 'unknown_account';
  if (status === 401 || note.reason !== undefined) return 'rejected';
  if (status === 503) return 'unavailable';
  if (note.quarantined) return 'quarantined';
  return status >= 500 ? 'error' : 'refused';
}

/** A 200 answer with `body` as JSON. */
export function ok(body: object): ReceiveResponse {
  return { status: 200, headers: { 'content-type': JSON_CONTENT_TYPE }, body: JSON.stringify(body) };
}
