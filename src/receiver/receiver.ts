import type { Logger } from 'pino';
import { within } from '../internal/within.js';
import { errorResponse, JSON_CONTENT_TYPE } from '../internal/error-response.js';
import { BodyBudget, bodyReadRefusal } from '../internal/limited-body.js';
import { assertRawBody, WebhookVerificationError, type HeaderMap, type SignatureScheme } from '../signature/index.js';
import type { PayhooksDatabase } from '../store/database.js';
import { PayhooksError } from '../errors.js';
import { DEFAULT_MAX_QUARANTINED, type QuarantineReceipt, quarantineDelivery } from '../store/quarantine.js';
import { readDelivery, type UnstorableDelivery, unstorableEvent } from './read-delivery.js';
import { createGroupCommit, type GroupCommitOptions, StorageTimeoutError, UnstorableEventError } from '../store/group-commit.js';
import { type InSpanOptions, inSpan, markSpanFailed, SPAN_KIND, traceParentOf, validTraceParent } from '../internal/tracing.js';
import type { Span } from '@opentelemetry/api';

/** A request as any HTTP framework can describe it. Header names must be lower-case. */
export interface ReceiveRequest {
  method: string;
  headers: HeaderMap;
  /**
   * The exact bytes of the body (any `Uint8Array`, a `Buffer` or one from another realm included). Anything else
   * (an object or a string a body parser made) is refused with 500 and a message that says how to mount the route.
   */
  rawBody: unknown;
}

/** The answer to write back; `body` is JSON text. */
export interface ReceiveResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Options of {@link createReceiver}. A mistake in them throws a TypeError (a missing or wrong kind of value) or a
 * RangeError (a number out of range) from `createReceiver`, never later at a delivery.
 */
export interface ReceiverOptions {
  store: PayhooksDatabase;
  /** How deliveries are signed: `createDefaultScheme({ secrets })` for the service's default. */
  scheme: SignatureScheme;
  /** Largest body accepted, a positive whole number of bytes; adapters stop reading past it. Default 1 MiB. */
  maxBodyBytes?: number | undefined;
  /**
   * The bytes of unfinished request bodies the adapters hold at once, across all requests: past it the largest body
   * being read is answered 503 and dropped (see `BodyBudget`). Default 32 MiB.
   */
  maxInFlightBodyBytes?: number | undefined;
  /**
   * How long storing a delivery may take in all (waiting for a batch, for a database connection and for the
   * statement) before the answer is 503, in ms, more than 0. Default 5000 ms: the sender allows 10 s, and the
   * rest is margin for the network and a busy process. Keep it well under 10 s.
   */
  ackBudgetMs?: number | undefined;
  /**
   * Group commit: deliveries arriving within `maxWaitMs` of each other are stored by one statement (up to `maxRows`
   * rows, `maxConcurrentBatches` statements at once), each answered once that statement has committed. Defaults in
   * `GROUP_COMMIT_DEFAULTS` (2 ms, 500 rows, 4).
   */
  groupCommit?: GroupCommitOptions | undefined;
  /**
   * Signed deliveries that cannot be stored as events kept in the quarantine at most (held, not yet released or
   * discarded); past it such a delivery is answered 503 and not kept, so the sender keeps it. Default 10,000. Each
   * holds at most `maxBodyBytes` of body.
   */
  maxQuarantined?: number | undefined;
  logger?: Logger | undefined;
  /**
   * Whether a delivery whose signature holds joins the trace its `traceparent` header names (its `webhook.receive`
   * span a child of that context, sampled as it says). Default false: every delivery's receive span starts a trace of
   * its own (under the span active in the app, if one is) with a link to the context the request carried, since
   * anyone who can reach the endpoint can write that header (docs/tracing.md#whose-trace-a-delivery-joins). An
   * unsigned or badly signed delivery is never a child of it, either way.
   */
  trustIncomingTraceContext?: boolean | undefined;
  /** Called after a new event is stored, e.g. to wake a worker in the same process. */
  onStored?: ((eventId: string) => void) | undefined;
  /** Called once per answered request, with what happened and how long it took (metrics: `createPayhooksMetrics`). */
  onDelivery?: ((delivery: DeliveryObservation) => void) | undefined;
}

/** What became of one request to the receiver, for metrics. */
export interface DeliveryObservation {
  /**
   * stored, duplicate, rejected (the signature), quarantined (signed but not storable as an event: kept, answered
   * 400), refused (another 4xx), unavailable (503), or error (500).
   */
  outcome: 'stored' | 'duplicate' | 'rejected' | 'quarantined' | 'refused' | 'unavailable' | 'error';
  status: number;
  /** The event type, once the signed envelope was read; null before. */
  eventType: string | null;
  /** Why the signature was rejected (`WebhookVerificationError.reason`), for `rejected`. */
  reason: string | null;
  /** From the call to the answer. */
  seconds: number;
}

/** A framework-free webhook receiver; adapters wrap {@link Receiver.receive}. */
export interface Receiver {
  readonly maxBodyBytes: number;
  /** Bounds the bytes of unfinished bodies the adapters hold at once, across requests. */
  readonly bodyBudget?: BodyBudget | undefined;
  receive(request: ReceiveRequest): Promise<ReceiveResponse>;
  /** Where adapters log a failure of `receive` itself (which they answer with 500). */
  readonly logger?: Logger | undefined;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
/** The default of {@link ReceiverOptions.ackBudgetMs}: half of the sender's 10 s. */
export const DEFAULT_ACK_BUDGET_MS = 5000;
export const DEFAULT_MAX_IN_FLIGHT_BODY_BYTES = 32 * 1024 * 1024;
const MAX_TIMER_MS = 2_147_483_647;

const RECEIVE_SPAN: InSpanOptions = { kind: SPAN_KIND.server, parent: 'linked' };
const TRUSTED_RECEIVE_SPAN: InSpanOptions = { kind: SPAN_KIND.server, parent: 'headers' };
const GROUP_COMMIT_SPAN: InSpanOptions = { attributes: { 'db.system.name': 'postgresql', 'db.operation.name': 'INSERT' } };

/** Header names kept with each event besides the signature scheme's own. */
const KEPT_HEADERS = ['content-type', 'user-agent'];

/**
 * Builds the receiver: verify the signature on the raw bytes, check the envelope, store once, acknowledge.
 *
 * @example
 * const receiver = createReceiver({ store, scheme: createDefaultScheme({ secrets: [secret] }) });
 * const { status, body } = await receiver.receive({ method: 'POST', headers, rawBody });
 */
export function createReceiver(options: ReceiverOptions): Receiver {
  if (typeof options !== 'object' || options === null) throw new TypeError('createReceiver takes an options object ({ store, scheme }).');
  const { maxBodyBytes, ackBudgetMs, maxQuarantined } = receiverLimits(options);
  if (typeof options.store !== 'object' || options.store === null || !('db' in options.store)) {
    throw new TypeError('store must be an open database from openDatabase().');
  }
  assertScheme(options.scheme, 'scheme');
  if (options.onStored !== undefined && typeof options.onStored !== 'function') {
    throw new TypeError('onStored must be a function (eventId) => void, or left out.');
  }
  const ingest = createGroupCommit(options.store, options.groupCommit, ackBudgetMs);
  const log = options.logger;
  const keptHeaders = [...new Set([...options.scheme.headerNames, ...KEPT_HEADERS])];

  const trusting = options.trustIncomingTraceContext === true;

  /**
   * One delivery in its `webhook.receive` span (docs/tracing.md): a server span of a trace of its own, linked to the
   * trace context the delivery carried (or, trusting it, its child once the signature holds), with what happened to
   * it; never the body, a header's value or the secret.
   */
  function receive(request: ReceiveRequest): Promise<ReceiveResponse> {
    const started = performance.now();
    const note: DeliveryNote = {};
    if (!trusting) return inSpan('webhook.receive', RECEIVE_SPAN, (span) => answer(request, note, started, span), request.headers);
    // A span cannot change its parent once started: the checks up to the signature run first, span-less (no I/O,
    // microseconds), and the span then starts from when the request came, under the sender's context only if it is
    // the sender's.
    let refusal: ReceiveResponse | undefined;
    try {
      refusal = refusalOf(request, note);
    } catch (err) {
      return Promise.reject(err);
    }
    const spanOptions = { ...(note.verified ? TRUSTED_RECEIVE_SPAN : RECEIVE_SPAN), startTime: started };
    return inSpan('webhook.receive', spanOptions, (span) => answer(request, note, started, span, refusal ?? null), request.headers);
  }

  /**
   * Answers one delivery inside its span and reports it; `checked` is what {@link refusalOf} already said (null: it
   * passed), undefined when it has not been asked yet.
   */
  async function answer(
    request: ReceiveRequest,
    note: DeliveryNote,
    started: number,
    span: Span,
    checked?: ReceiveResponse | null,
  ): Promise<ReceiveResponse> {
    const response = (checked === undefined ? refusalOf(request, note) : checked) ?? (await store(request, note, span));
    const outcome = outcomeOf(response.status, note);
    if (span.isRecording()) describeReceipt(span, request, response, outcome, note);
    options.onDelivery?.({
      outcome,
      status: response.status,
      eventType: note.eventType ?? null,
      reason: note.reason ?? null,
      seconds: (performance.now() - started) / 1000,
    });
    return response;
  }

  /**
   * The answer to a request refused before anything is stored (method, body, media type, signature), or undefined
   * when it is an authentic delivery (`note.verified`). Synchronous and without I/O.
   */
  function refusalOf(request: ReceiveRequest, note: DeliveryNote): ReceiveResponse | undefined {
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
      options.scheme.verify({ headers: request.headers, rawBody });
    } catch (cause) {
      if (!(cause instanceof WebhookVerificationError)) throw cause;
      log?.warn({ reason: cause.reason, detail: cause.message }, 'webhook signature rejected');
      note.reason = cause.reason;
      return errorResponse(401, cause.publicMessage);
    }
    note.verified = true;
    return undefined;
  }

  /** Stores an authentic delivery (or quarantines it) and says how that went. */
  async function store(request: ReceiveRequest, note: DeliveryNote, span: Span): Promise<ReceiveResponse> {
    // refusalOf checked it is bytes.
    const rawBody = request.rawBody as Uint8Array;
    const headers = pickHeaders(request.headers, keptHeaders);
    const read = readDelivery(rawBody, headers);
    if (!read.ok) return quarantine(read, rawBody, headers, note);
    const { eventId, eventType } = read.event;
    note.eventType = eventType;
    note.eventId = eventId;
    // What every attempt to process it links to: this span's context, or without tracing the one it arrived with.
    read.event.traceParent = traceParentOf(span) ?? validTraceParent(request.headers.traceparent) ?? null;

    const stored = inSpan('payhooks.group_commit', GROUP_COMMIT_SPAN, async (commit) => {
      const outcome = await ingest.store(read.event);
      if (commit.isRecording()) commit.setAttribute('payhooks.delivery.duplicate', !outcome.inserted);
      return outcome;
    });
    let outcome: Awaited<typeof stored> | 'timeout';
    try {
      // The group commit gives up on the delivery at the same budget; this timer answers even if it could not.
      outcome = await within(stored, ackBudgetMs);
    } catch (cause) {
      if (cause instanceof UnstorableEventError) {
        return quarantine(unstorableEvent(PayhooksError.describe(cause), eventId, eventType), rawBody, headers, note);
      }
      if (cause instanceof StorageTimeoutError) outcome = 'timeout';
      else {
        log?.error({ err: cause, eventId, eventType }, 'could not store webhook; answering 503 so the sender retries');
        return errorResponse(503, 'Storage is unavailable; the delivery was not accepted and should be retried.');
      }
    }
    if (outcome === 'timeout') {
      // The insert may still land; the sender's retry is then counted as a duplicate, so nothing is lost. The pool
      // itself discards the connections that went silent (a statement past its deadline condemns them).
      stored.catch(() => undefined);
      log?.error({ eventId, eventType, ackBudgetMs }, 'storage did not answer within the ack budget; answering 503');
      return errorResponse(503, 'Storage did not answer in time; the delivery was not accepted and should be retried.');
    }
    if (!outcome.inserted) {
      log?.info({ eventId, eventType, deliveries: outcome.deliveries }, 'duplicate webhook delivery');
      note.duplicate = true;
      return ok({ received: true, duplicate: true });
    }
    log?.info({ eventId, eventType }, 'webhook stored');
    options.onStored?.(eventId);
    return ok({ received: true });
  }

  /**
   * A signed delivery that cannot be stored as an event: kept in the quarantine, byte for byte, and answered 400 with
   * the reason and where it is kept, the same way on every repeat (docs/receiver.md#quarantine). 503 when it could
   * not be kept (storage away, or the quarantine full), so that the sender keeps it and retries.
   */
  async function quarantine(
    refusal: UnstorableDelivery,
    rawBody: Uint8Array,
    headers: Record<string, string>,
    note: DeliveryNote,
  ): Promise<ReceiveResponse> {
    const { eventId, eventType } = refusal;
    if (eventType !== undefined && !eventType.includes('\u0000')) note.eventType = eventType;
    if (eventId !== undefined && !eventId.includes('\u0000')) note.eventId = eventId;
    const logged = { kind: refusal.kind, eventType: note.eventType };
    const kept = quarantineDelivery(
      options.store,
      { kind: refusal.kind, reason: refusal.message, eventId, eventType, rawBody, headers },
      maxQuarantined,
    );
    let receipt: QuarantineReceipt | undefined | 'timeout';
    try {
      receipt = await within(kept, ackBudgetMs);
    } catch (cause) {
      log?.error({ err: cause, ...logged }, 'could not quarantine an unstorable delivery; answering 503 so the sender retries');
      return errorResponse(503, 'Storage is unavailable; the delivery was not accepted and should be retried.');
    }
    if (receipt === 'timeout') {
      // It may still be kept; the sender's retry then counts on its row.
      kept.catch(() => undefined);
      log?.error({ ...logged, ackBudgetMs }, 'quarantining did not finish within the ack budget; answering 503');
      return errorResponse(503, 'Storage did not answer in time; the delivery was not accepted and should be retried.');
    }
    if (receipt === undefined) {
      log?.error(
        { ...logged, maxQuarantined },
        'the quarantine is full: an unstorable delivery was not kept; answering 503 so the sender keeps it',
      );
      return errorResponse(
        503,
        'The delivery cannot be stored as an event and the quarantine is full; it was not accepted and should be retried.',
      );
    }
    if (receipt.state === 'released') {
      // An operator released an earlier delivery of these bytes as an event: this one is its duplicate.
      note.duplicate = true;
      return ok({ received: true, duplicate: true });
    }
    note.quarantined = true;
    log?.warn({ ...logged, quarantineId: receipt.id, deliveries: receipt.deliveries }, refusal.logLine);
    return errorResponse(400, `${refusal.message} The delivery is kept in quarantine as #${receipt.id}.`);
  }

  const bodyBudget = new BodyBudget(options.maxInFlightBodyBytes ?? DEFAULT_MAX_IN_FLIGHT_BODY_BYTES);
  return { maxBodyBytes, bodyBudget, receive, logger: log };
}

/** What {@link createReceiver}'s `receive` learns along the way, for {@link DeliveryObservation}. */
interface DeliveryNote {
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
function describeReceipt(
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
  if (response.status >= 500) markSpanFailed(span, String(response.status));
}

function outcomeOf(status: number, note: DeliveryNote): DeliveryObservation['outcome'] {
  if (status === 200) return note.duplicate ? 'duplicate' : 'stored';
  if (status === 401) return 'rejected';
  if (status === 503) return 'unavailable';
  if (note.quarantined) return 'quarantined';
  return status >= 500 ? 'error' : 'refused';
}

/**
 * The body limit and the ack budget of {@link ReceiverOptions} with their defaults applied, checked: a RangeError
 * names the option and what it takes. `createPayhooks` checks them with this when it is created, before any delivery.
 *
 * @example
 * receiverLimits({ maxBodyBytes: 0 }); // throws RangeError: maxBodyBytes must be a positive whole number of bytes, not 0.
 */
export function receiverLimits(options: Pick<ReceiverOptions, 'maxBodyBytes' | 'ackBudgetMs' | 'maxQuarantined'>): {
  maxBodyBytes: number;
  ackBudgetMs: number;
  maxQuarantined: number;
} {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  if (!Number.isSafeInteger(maxBodyBytes) || maxBodyBytes <= 0) {
    throw new RangeError(`maxBodyBytes must be a positive whole number of bytes, not ${String(maxBodyBytes)}.`);
  }
  const ackBudgetMs = options.ackBudgetMs ?? DEFAULT_ACK_BUDGET_MS;
  if (typeof ackBudgetMs !== 'number' || !Number.isFinite(ackBudgetMs) || ackBudgetMs <= 0) {
    throw new RangeError(`ackBudgetMs must be a positive number of milliseconds, not ${String(ackBudgetMs)}.`);
  }
  // Node runs a longer timer after 1 ms, which would answer every delivery 503 at once.
  if (ackBudgetMs > MAX_TIMER_MS) {
    throw new RangeError(
      `ackBudgetMs must be at most ${MAX_TIMER_MS} ms (Node's longest timer), not ${ackBudgetMs}; keep it well under the sender's 10 s.`,
    );
  }
  const maxQuarantined = options.maxQuarantined ?? DEFAULT_MAX_QUARANTINED;
  if (!Number.isSafeInteger(maxQuarantined) || maxQuarantined < 0) {
    throw new RangeError(`maxQuarantined must be a whole number of at least 0, not ${String(maxQuarantined)}.`);
  }
  return { maxBodyBytes, ackBudgetMs, maxQuarantined };
}

/** Throws a TypeError unless `scheme` looks like a {@link SignatureScheme}; `option` names it in the message. */
export function assertScheme(scheme: unknown, option: string): asserts scheme is SignatureScheme {
  const candidate = scheme as Partial<SignatureScheme> | null | undefined;
  if (typeof candidate?.verify !== 'function' || !Array.isArray(candidate.headerNames)) {
    throw new TypeError(
      `${option} must be a signature scheme such as createDefaultScheme({ secrets }) (an object with verify and headerNames).`,
    );
  }
}

function ok(body: object): ReceiveResponse {
  return { status: 200, headers: { 'content-type': JSON_CONTENT_TYPE }, body: JSON.stringify(body) };
}

function header(headers: HeaderMap, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : value?.[0];
}

function isJson(contentType: string | undefined): boolean {
  const mediaType = contentType?.split(';', 1)[0]?.trim().toLowerCase();
  return mediaType === 'application/json' || (mediaType?.startsWith('application/') === true && mediaType.endsWith('+json'));
}

function pickHeaders(headers: HeaderMap, names: readonly string[]): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of names) {
    const value = headers[name];
    if (value !== undefined) kept[name] = typeof value === 'string' ? value : value.join(', ');
  }
  return kept;
}
