import type { Logger } from 'pino';
import { envelopeSchema, resourceKeyOf } from '../events/index.js';
import { WebhookVerificationError, type HeaderMap, type SignatureScheme } from '../signature/index.js';
import type { PayhooksDatabase } from '../store/database.js';
import { storeEvent } from '../store/inbox.js';

/** A request as any HTTP framework can describe it. Header names must be lower-case. */
export interface ReceiveRequest {
  method: string;
  headers: HeaderMap;
  /** The exact bytes of the body. Anything else (an object a body parser made) is refused with 500. */
  rawBody: unknown;
}

/** The answer to write back; `body` is JSON text. */
export interface ReceiveResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Options of {@link createReceiver}. */
export interface ReceiverOptions {
  store: PayhooksDatabase;
  /** How deliveries are signed: `createDefaultScheme({ secrets })` for the service's default. */
  scheme: SignatureScheme;
  /** Largest body accepted; adapters stop reading past it. Default 1 MiB. */
  maxBodyBytes?: number | undefined;
  /** How long storage may take before the answer is 503 (the sender allows 10 s). Default 8000 ms. */
  ackBudgetMs?: number | undefined;
  logger?: Logger | undefined;
  /** Called after a new event is stored, e.g. to wake a worker in the same process. */
  onStored?: ((eventId: string) => void) | undefined;
}

/** A framework-free webhook receiver; adapters wrap {@link Receiver.receive}. */
export interface Receiver {
  readonly maxBodyBytes: number;
  receive(request: ReceiveRequest): Promise<ReceiveResponse>;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
export const DEFAULT_ACK_BUDGET_MS = 8000;

/** Header names kept with each event besides the signature scheme's own. */
const KEPT_HEADERS = ['content-type', 'user-agent'];

const BODY_ALREADY_PARSED =
  'payhooks received a parsed body instead of the raw bytes, so the signature cannot be checked. ' +
  'Mount the webhook route before any JSON body parser, e.g. app.post("/webhooks", hooks.express()) ' +
  'above app.use(express.json()), or exclude the webhook path from the parser.';

/**
 * Builds the receiver: verify the signature on the raw bytes, check the envelope, store once, acknowledge.
 *
 * @example
 * const receiver = createReceiver({ store, scheme: createDefaultScheme({ secrets: [secret] }) });
 * const { status, body } = await receiver.receive({ method: 'POST', headers, rawBody });
 */
export function createReceiver(options: ReceiverOptions): Receiver {
  const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const ackBudgetMs = options.ackBudgetMs ?? DEFAULT_ACK_BUDGET_MS;
  const log = options.logger;
  const keptHeaders = [...new Set([...options.scheme.headerNames, ...KEPT_HEADERS])];

  async function receive(request: ReceiveRequest): Promise<ReceiveResponse> {
    if (request.method.toUpperCase() !== 'POST') {
      return { ...error(405, 'Only POST is accepted here.'), headers: { ...jsonHeaders, allow: 'POST' } };
    }
    const rawBody = request.rawBody;
    if (!(rawBody instanceof Uint8Array)) {
      log?.error({ reason: 'body_already_parsed' }, BODY_ALREADY_PARSED);
      return error(500, BODY_ALREADY_PARSED);
    }
    if (rawBody.byteLength > maxBodyBytes) return tooLarge(maxBodyBytes);
    if (!isJson(header(request.headers, 'content-type'))) {
      return error(415, 'Content-Type must be application/json.');
    }

    try {
      options.scheme.verify({ headers: request.headers, rawBody });
    } catch (cause) {
      if (!(cause instanceof WebhookVerificationError)) throw cause;
      log?.warn({ reason: cause.reason, detail: cause.message }, 'webhook signature rejected');
      return error(401, cause.publicMessage);
    }

    const text = decodeUtf8(rawBody);
    if (text === undefined) return error(400, 'The body is not valid UTF-8.');
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      return error(400, 'The body is not valid JSON.');
    }
    const envelope = envelopeSchema.safeParse(json);
    if (!envelope.success) {
      const paths = envelope.error.issues.map((issue) => issue.path.join('.') || '(root)').join(', ');
      return error(400, `The body is not a webhook envelope ({eventId, eventType, data}); check: ${paths}.`);
    }
    const { eventId, eventType, data } = envelope.data;

    const stored = storeEvent(options.store, {
      eventId,
      eventType,
      resourceKey: resourceKeyOf(eventType, data),
      rawBody: text,
      headers: pickHeaders(request.headers, keptHeaders),
    });
    let outcome: Awaited<typeof stored> | 'timeout';
    try {
      outcome = await withinBudget(stored, ackBudgetMs);
    } catch (cause) {
      log?.error({ err: cause, eventId, eventType }, 'could not store webhook; answering 503 so the sender retries');
      return error(503, 'Storage is unavailable; the delivery was not accepted and should be retried.');
    }
    if (outcome === 'timeout') {
      // The insert may still land; the sender's retry is then counted as a duplicate, so nothing is lost.
      stored.catch(() => undefined);
      log?.error({ eventId, eventType, ackBudgetMs }, 'storage did not answer within the ack budget; answering 503');
      return error(503, 'Storage did not answer in time; the delivery was not accepted and should be retried.');
    }
    if (!outcome.inserted) {
      log?.info({ eventId, eventType, deliveries: outcome.deliveries }, 'duplicate webhook delivery');
      return ok({ received: true, duplicate: true });
    }
    log?.info({ eventId, eventType }, 'webhook stored');
    options.onStored?.(eventId);
    return ok({ received: true });
  }

  return { maxBodyBytes, receive };
}

const jsonHeaders = { 'content-type': 'application/json; charset=utf-8' };

function ok(body: object): ReceiveResponse {
  return { status: 200, headers: jsonHeaders, body: JSON.stringify(body) };
}

/** An error answer in the service's own shape, `{"error":{"message":…}}`. */
export function error(status: number, message: string): ReceiveResponse {
  return { status, headers: jsonHeaders, body: JSON.stringify({ error: { message } }) };
}

/** The 413 answer; adapters use it too when they stop reading early. */
export function tooLarge(maxBodyBytes: number): ReceiveResponse {
  return error(413, `The body is larger than the limit of ${maxBodyBytes} bytes.`);
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

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

function withinBudget<T>(work: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
