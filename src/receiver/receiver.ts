import { SENDER_ID_HEADERS } from '../internal/sender-id.js';
import type { Logger } from 'pino';
import { within } from '../internal/within.js';
import { errorResponse } from '../internal/error-response.js';
import { BodyBudget } from '../internal/limited-body.js';
import type { HeaderMap, SignatureScheme } from '../signature/index.js';
import type { PayhooksDatabase } from '../store/database.js';
import { PayhooksError } from '../errors.js';
import { DEFAULT_MAX_QUARANTINED } from '../store/quarantine.js';
import { readDelivery, unstorableEvent } from './read-delivery.js';
import { createGroupCommit, type GroupCommitOptions, StorageTimeoutError, UnstorableEventError } from '../store/group-commit.js';
import { type InSpanOptions, inSpan, SPAN_KIND, traceParentOf, validTraceParent } from '../internal/tracing.js';
import type { Span } from '@opentelemetry/api';
import { type DeliveryNote, describeReceipt, ok, outcomeOf } from './delivery-note.js';
import { quarantineAnswer } from './quarantine-answer.js';
import { NO_SUCH_ENDPOINT, type RefusalChecks, refusalOf } from './refusal.js';
import { AccountIdError, DEFAULT_ACCOUNT, isAccountId } from '../store/accounts.js';

/** A request as any HTTP framework can describe it. Header names must be lower-case. */
export interface ReceiveRequest {
  method: string;
  headers: HeaderMap;
  /**
   * The exact bytes of the body (any `Uint8Array`, a `Buffer` or one from another realm included). Anything else
   * (an object or a string a body parser made) is refused with 500 and a message that says how to mount the route.
   */
  rawBody: unknown;
  /**
   * The account whose route the request came to (`/webhooks/{account}`): verified with that account's secrets only, and
   * stored as its event. Undefined: the plain route, the default account's ({@link DEFAULT_ACCOUNT}).
   */
  account?: string | undefined;
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
  /**
   * How the default account's deliveries are signed: `createDefaultScheme({ secrets })` for the service's default.
   * Required unless `accounts` is given.
   */
  scheme?: SignatureScheme | undefined;
  /**
   * How each account's deliveries are signed, by account id (docs/accounts.md): a delivery to `/webhooks/{account}` is
   * verified with that account's scheme only. An account not named here is answered 404, the same answer and the same
   * work as a delivery not signed by the account it names, so that the answer does not tell which accounts exist.
   */
  accounts?: Readonly<Record<string, SignatureScheme>> | undefined;
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
   * stored, duplicate, rejected (the signature), unknown_account (a route of no configured account), quarantined (signed but not storable as an event: kept, answered
   * 400), refused (another 4xx), unavailable (503), or error (500).
   */
  outcome: 'stored' | 'duplicate' | 'rejected' | 'unknown_account' | 'quarantined' | 'refused' | 'unavailable' | 'error';
  /** The account whose route it came to; null when that account is not configured (`unknown_account`). */
  account: string | null;
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

/**
 * Header names kept with each event besides the signature scheme's own: the sender's ids of the delivery too, by which
 * an operator finds it (`payhooks events show`, the console's search; store/find-by-id.ts).
 */
const KEPT_HEADERS = ['content-type', 'user-agent', ...SENDER_ID_HEADERS];

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
  const schemes = accountSchemes(options);
  if (options.onStored !== undefined && typeof options.onStored !== 'function') {
    throw new TypeError('onStored must be a function (eventId) => void, or left out.');
  }
  const ingest = createGroupCommit(options.store, options.groupCommit, ackBudgetMs);
  const log = options.logger;
  const keptHeaders = [...new Set([...[...schemes.values()].flatMap((scheme) => scheme.headerNames), ...KEPT_HEADERS])];

  const trusting = options.trustIncomingTraceContext === true;
  const refusal = routeRefusal(schemes, maxBodyBytes, log);
  const keeping = { store: options.store, ackBudgetMs, maxQuarantined, log };

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
    let refused: ReceiveResponse | undefined;
    try {
      refused = refusal(request, note);
    } catch (err) {
      return Promise.reject(err);
    }
    const spanOptions = { ...(note.verified ? TRUSTED_RECEIVE_SPAN : RECEIVE_SPAN), startTime: started };
    return inSpan('webhook.receive', spanOptions, (span) => answer(request, note, started, span, refused ?? null), request.headers);
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
    const response = (checked === undefined ? refusal(request, note) : checked) ?? (await store(request, note, span));
    const outcome = outcomeOf(response.status, note);
    if (span.isRecording()) describeReceipt(span, request, response, outcome, note);
    options.onDelivery?.({
      outcome,
      status: response.status,
      account: note.unknownAccount ? null : (note.account ?? null),
      eventType: note.eventType ?? null,
      reason: note.reason ?? null,
      seconds: (performance.now() - started) / 1000,
    });
    return response;
  }

  /** Stores an authentic delivery (or quarantines it) and says how that went. */
  async function store(request: ReceiveRequest, note: DeliveryNote, span: Span): Promise<ReceiveResponse> {
    // refusalOf checked it is bytes.
    const rawBody = request.rawBody as Uint8Array;
    const headers = pickHeaders(request.headers, keptHeaders);
    const read = readDelivery(rawBody, headers);
    const account = note.account ?? DEFAULT_ACCOUNT;
    if (!read.ok) return quarantineAnswer(account, read, rawBody, headers, note, keeping);
    const { eventId, eventType } = read.event;
    note.eventType = eventType;
    note.eventId = eventId;
    // What every attempt to process it links to: this span's context, or without tracing the one it arrived with.
    read.event.traceParent = traceParentOf(span) ?? validTraceParent(request.headers.traceparent) ?? null;

    const stored = inSpan('payhooks.group_commit', GROUP_COMMIT_SPAN, async (commit) => {
      const outcome = await ingest.store({ ...read.event, account });
      if (commit.isRecording()) commit.setAttribute('payhooks.delivery.duplicate', !outcome.inserted);
      return outcome;
    });
    let outcome: Awaited<typeof stored> | 'timeout';
    try {
      // The group commit gives up on the delivery at the same budget; this timer answers even if it could not.
      outcome = await within(stored, ackBudgetMs);
    } catch (cause) {
      if (cause instanceof UnstorableEventError) {
        return quarantineAnswer(
          account,
          unstorableEvent(PayhooksError.describe(cause), eventId, eventType),
          rawBody,
          headers,
          note,
          keeping,
        );
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
    log?.info({ account, eventId, eventType }, 'webhook stored');
    options.onStored?.(eventId);
    return ok({ received: true });
  }

  const bodyBudget = new BodyBudget(options.maxInFlightBodyBytes ?? DEFAULT_MAX_IN_FLIGHT_BODY_BYTES);
  return { maxBodyBytes, bodyBudget, receive, logger: log };
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

/**
 * {@link refusalOf} for a request's route, its account noted: the route of an unknown account is checked with a
 * configured scheme (the decoy), so that the work done, and so the time taken, is that of a known account whose
 * signature does not hold, and is then refused whatever the signature.
 */
function routeRefusal(
  schemes: ReadonlyMap<string, SignatureScheme>,
  maxBodyBytes: number,
  log: Logger | undefined,
): (request: ReceiveRequest, note: DeliveryNote) => ReceiveResponse | undefined {
  const decoy = schemes.values().next().value as SignatureScheme;
  const checksOf = (request: ReceiveRequest, note: DeliveryNote): RefusalChecks => {
    const account = request.account ?? DEFAULT_ACCOUNT;
    note.account = account;
    const scheme = schemes.get(account);
    if (scheme === undefined) note.unknownAccount = true;
    // The decoy's verdict is not this delivery's: it logs nothing of it (the caller says what happened).
    return { maxBodyBytes, scheme: scheme ?? decoy, log: scheme ? log : undefined, accountRoute: request.account !== undefined || !scheme };
  };
  return (request, note) => {
    const refused = refusalOf(request, note, checksOf(request, note));
    if (!note.unknownAccount) return refused;
    note.verified = false;
    // The id comes from the request's path: shown cut short, never trusted.
    log?.warn(
      { account: request.account?.slice(0, 64) ?? DEFAULT_ACCOUNT },
      'a delivery for an account that is not configured; answered 404',
    );
    if (refused === undefined || refused.status === 404) return errorResponse(404, NO_SUCH_ENDPOINT);
    return refused;
  };
}

/**
 * The signature scheme of each account the receiver takes deliveries for: `accounts`, and `scheme` as the default
 * account's. Throws a TypeError when there is none, or one is not a scheme, or an account id is not one payhooks takes.
 */
function accountSchemes(options: Pick<ReceiverOptions, 'scheme' | 'accounts'>): Map<string, SignatureScheme> {
  const schemes = new Map<string, SignatureScheme>();
  if (options.scheme !== undefined) {
    assertScheme(options.scheme, 'scheme');
    schemes.set(DEFAULT_ACCOUNT, options.scheme);
  }
  for (const [id, scheme] of Object.entries(options.accounts ?? {})) {
    if (!isAccountId(id)) throw new TypeError(new AccountIdError(id).message);
    assertScheme(scheme, `accounts[${JSON.stringify(id)}]`);
    schemes.set(id, scheme);
  }
  if (schemes.size === 0)
    throw new TypeError('createReceiver needs a signature scheme: { scheme } for one account, or { accounts } for several.');
  return schemes;
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

function pickHeaders(headers: HeaderMap, names: readonly string[]): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of names) {
    const value = headers[name];
    if (value !== undefined) kept[name] = typeof value === 'string' ? value : value.join(', ');
  }
  return kept;
}
