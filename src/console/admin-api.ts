import type { Logger } from 'pino';
import { z } from 'zod';
import { errorResponse, JSON_CONTENT_TYPE, type JsonResponse } from '../internal/error-response.js';
import { activityByMinute, MAX_EVENT_PAGE, pageEvents } from '../store/console-queries.js';
import type { PayhooksDatabase } from '../store/database.js';
import { countEventsByStatus, getEvent, oldestPendingEvent, type StoredEvent } from '../store/inbox.js';
import { countReplayable, replayEvents } from '../store/maintenance.js';
import { EVENT_STATUSES } from '../store/schema.js';
import { sleep } from '../internal/sleep.js';
import { consoleAsset } from './console-page.js';
import { FailureThrottle } from './failure-throttle.js';
import { InboxOpError, runInboxOp } from './inbox-ops.js';
import { arrivalPosition, filterText, identifierText } from './inputs.js';
import { maskPersonalData } from './mask.js';
import { adminTokenWeakness, bearerMatches } from './token.js';

/** The path under which the console's JSON API answers. */
export const ADMIN_API_PATH = '/admin/api';

/** A request body, read only once the request is let in: its text, or the answer that refuses it (413, 400). */
export type AdminBodyReader = () => Promise<{ text: string } | { refusal: JsonResponse }>;

/** A request as any HTTP framework can describe it; header names lower-case. */
export interface AdminRequest {
  method: string;
  /** The path and query, e.g. `/admin/api/events?status=dead`. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /**
   * The body (POSTs only): its text, or a function that reads it, which the API calls only after the token is
   * checked and only on a route that takes a body, so that no unauthenticated request has its body read.
   */
  body?: string | AdminBodyReader | undefined;
  /** Whether the connection came from this machine (127.0.0.1 or ::1): only then does `localToken` count. */
  fromLoopback?: boolean | undefined;
  /** The client's address, under which failed authentications are counted and slowed; unknown ones share one count. */
  clientAddress?: string | undefined;
}

/** Options of {@link createAdminApi}. */
export interface AdminApiOptions {
  store: PayhooksDatabase | (() => Promise<PayhooksDatabase>);
  /** The bearer token every request must carry; undefined turns the console off (every path answers 404). */
  token: string | undefined;
  /**
   * A second token, for this machine's command line only (requests with `fromLoopback`), that `payhooks serve`
   * writes to a file only its user can read, so `payhooks events` can reach the embedded database it holds. It
   * opens `POST /admin/api/inbox` and nothing else, whether or not the console is on; that route takes no other
   * token.
   */
  localToken?: string | undefined;
  logger?: Logger | undefined;
}

/** The console's JSON API, framework-free: adapters turn requests into {@link AdminRequest}s. */
export interface AdminApi {
  handle(request: AdminRequest): Promise<JsonResponse>;
}

const REPLAYABLE = ['dead', 'invalid', 'ignored', 'done'] as const;
// Years 1 to 9999 in UTC: outside them a JavaScript date is written as `0000-…` or `+010000-…`, which the database
// refuses (a 500 it would be, not the client's 400).
const EARLIEST = new Date('0001-01-01T00:00:00Z').getTime();
const LATEST = new Date('9999-12-31T23:59:59.999Z').getTime();
const isoDate = z.iso
  .datetime({ offset: true })
  .transform((text) => new Date(text))
  .refine((date) => date.getTime() >= EARLIEST && date.getTime() <= LATEST, 'must be between the years 0001 and 9999 (UTC)');

const listQuery = z.strictObject({
  status: z.enum(EVENT_STATUSES).optional(),
  type: filterText.optional(),
  resource: filterText.optional(),
  id: filterText.optional(),
  from: isoDate.optional(),
  to: isoDate.optional(),
  cursor: arrivalPosition.optional(),
  limit: z.coerce.number().int().min(1).max(MAX_EVENT_PAGE).optional(),
});
const bulkReplayBody = z.strictObject({ status: z.enum(REPLAYABLE), type: identifierText.optional() });
const statsQuery = z.strictObject({ hours: z.coerce.number().int().min(1).max(168).default(3) });

const ok = (value: unknown, status = 200): JsonResponse => ({
  status,
  // Event bodies are customers' data: never kept by a browser or a proxy.
  headers: { 'content-type': JSON_CONTENT_TYPE, 'cache-control': 'no-store' },
  body: JSON.stringify(value),
});

/** A request the API refuses with a 4xx and a message, before touching the database. */
class BadRequest extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A request refused with a ready answer (a body too large to read, say). */
class Refused extends Error {
  constructor(readonly response: JsonResponse) {
    super(response.body);
  }
}

function parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join('.') || what}: ${issue.message}`);
  throw new BadRequest(400, `Invalid ${what}: ${problems.join('; ')}.`);
}

const summary = (event: StoredEvent) => ({
  ...event,
  // Errors quote what a handler saw, which may include a customer's email.
  lastError: event.lastError === null ? null : maskPersonalData(event.lastError),
});

/** The command line's route (`payhooks events` beside serve): the local token's only route, and its only token. */
const INBOX_PATH = `${ADMIN_API_PATH}/inbox`;
const NOWHERE = 'http://console.invalid';

/** A request's path (without trailing slashes) and query as the router reads them; `valid` false when unparseable. */
interface Target {
  path: string;
  query: Record<string, string>;
  valid: boolean;
}

function targetOf(url: string): Target {
  try {
    const parsed = new URL(url, NOWHERE);
    return { path: parsed.pathname.replace(/\/+$/, ''), query: Object.fromEntries(parsed.searchParams), valid: true };
  } catch {
    return { path: url.split('?', 1)[0]!.replace(/\/+$/, ''), query: {}, valid: false };
  }
}

/**
 * The operator console's API under `/admin/api/`: events with filters and cursor pages, one event in full (personal
 * data masked unless `?reveal=true`), replay of one event or of every event in a state (and of a type), and counts
 * over time. Every request needs `Authorization: Bearer <token>`, compared in constant time; without a token the
 * console is off and every path answers 404. Failed tokens from one address are answered more and more slowly
 * ({@link FailureThrottle}). `handle` never rejects: a bad request is a 4xx with its reason, anything else a 500
 * that is logged.
 *
 * @example
 * const admin = createAdminApi({ store, token: process.env.PAYHOOKS_ADMIN_TOKEN });
 * const { status, body } = await admin.handle({ method: 'GET', url: '/admin/api/events?status=dead', headers });
 */
export function createAdminApi(options: AdminApiOptions): AdminApi {
  const { token, localToken, logger } = options;
  if (token !== undefined) {
    const weakness = adminTokenWeakness(token);
    if (weakness) throw new RangeError(`The console token (PAYHOOKS_ADMIN_TOKEN) is too weak: ${weakness}.`);
  }
  const storeOf = typeof options.store === 'function' ? options.store : () => Promise.resolve(options.store as PayhooksDatabase);
  const throttle = new FailureThrottle(logger);

  async function route(request: AdminRequest, target: Target, store: PayhooksDatabase): Promise<JsonResponse> {
    if (!target.valid) throw new BadRequest(400, 'The request target is not a valid path and query.');
    const { path, query } = target;
    const method = request.method.toUpperCase();
    const eventPath = /^\/admin\/api\/events\/([^/]+)(\/replay)?$/.exec(path);

    if (path === `${ADMIN_API_PATH}/events` && method === 'GET') {
      const filter = parse(listQuery, query, 'query');
      const page = await pageEvents(store, {
        status: filter.status,
        eventType: filter.type,
        resourceKey: filter.resource,
        eventIdPrefix: filter.id,
        receivedFrom: filter.from,
        receivedBefore: filter.to,
        cursor: filter.cursor,
        limit: filter.limit,
      });
      return ok({ events: page.events.map(summary), nextCursor: page.nextCursor });
    }
    if (eventPath && !eventPath[2] && method === 'GET') {
      const eventId = eventIdOf(eventPath[1]!);
      const event = await getEvent(store, eventId);
      if (!event) throw new BadRequest(404, `No event ${eventId} is stored.`);
      const reveal = query.reveal === 'true';
      if (reveal) logger?.info({ eventId }, 'console: personal data of an event revealed');
      const rawBody = reveal ? event.rawBody : maskPersonalData(event.rawBody);
      return ok({ ...(reveal ? event : summary(event)), rawBody, masked: !reveal });
    }
    if (eventPath?.[2] && method === 'POST') {
      const eventId = eventIdOf(eventPath[1]!);
      const event = await getEvent(store, eventId);
      if (!event) throw new BadRequest(404, `No event ${eventId} is stored.`);
      const replayed = await replayEvents(store, { eventIds: [eventId] });
      if (replayed.length === 0)
        throw new BadRequest(409, `Event ${eventId} is ${event.status}: only a finished or failed event is replayed.`);
      logger?.info({ eventId, was: event.status }, 'console: event replayed');
      return ok({ replayed });
    }
    if (path === `${ADMIN_API_PATH}/replay` && method === 'POST') {
      const selection = parse(bulkReplayBody, jsonBody(await bodyText(request)), 'body');
      const which = { status: selection.status, eventType: selection.type };
      const replayed = await replayEvents(store, which);
      logger?.info({ ...which, count: replayed.length }, 'console: events replayed');
      return ok({ replayed: replayed.length, eventIds: replayed, left: await countReplayable(store, which) });
    }
    if (path === INBOX_PATH && method === 'POST') {
      const call = jsonBody(await bodyText(request));
      if (typeof call !== 'object' || call === null) throw new BadRequest(400, 'The body must be {"op": …, "args": […]}.');
      try {
        const { op, args } = call as { op?: unknown; args?: unknown };
        const result = await runInboxOp(store, op, args);
        // No `result` member for undefined (an event not found), so the client gets undefined back, not null.
        return ok(result === undefined ? {} : { result });
      } catch (err) {
        if (err instanceof InboxOpError) throw new BadRequest(400, err.message);
        throw err;
      }
    }
    if (path === `${ADMIN_API_PATH}/stats` && method === 'GET') {
      const { hours } = parse(statsQuery, query, 'query');
      const [byStatus, oldest, activity] = await Promise.all([
        countEventsByStatus(store),
        oldestPendingEvent(store),
        activityByMinute(store, hours),
      ]);
      const counts = Object.fromEntries(EVENT_STATUSES.map((status) => [status, byStatus[status] ?? 0]));
      return ok({ byStatus: counts, oldestPending: oldest ?? null, hours, activity });
    }
    const known = ['events', 'replay', 'stats', 'inbox'].some((name) => path === `${ADMIN_API_PATH}/${name}`) || eventPath;
    throw new BadRequest(known ? 405 : 404, known ? `${method} is not allowed on ${path}.` : `Nothing at ${path}.`);
  }

  /** The answer to a request whose token does not open what it asks for; failures from one address are slowed. */
  async function unauthorized(request: AdminRequest, authorization: string | undefined): Promise<JsonResponse> {
    // Only a request that offers a token is a guess; one without (a health checker, a curious browser) is not counted.
    if (authorization !== undefined) await sleep(throttle.failed(request.clientAddress));
    const refused = errorResponse(401, 'Unauthorized: send the console token as Authorization: Bearer <PAYHOOKS_ADMIN_TOKEN>.');
    return { ...refused, headers: { ...refused.headers, 'www-authenticate': 'Bearer realm="payhooks"' } };
  }

  /** Who gets in, decided before any body is read or the database is asked anything; undefined lets the request in. */
  async function refusal(request: AdminRequest, target: Target): Promise<JsonResponse | undefined> {
    const authorization = headerOf(request.headers.authorization);
    const off = () => errorResponse(404, `Nothing at ${target.path || '/'}.`);
    if (target.path === INBOX_PATH) {
      if (localToken !== undefined && request.fromLoopback === true && bearerMatches(authorization, localToken)) return undefined;
      if (token === undefined) return off();
      if (bearerMatches(authorization, token))
        return errorResponse(
          403,
          `${INBOX_PATH} is the command line's route on this machine: the console token does not open it. Use ${ADMIN_API_PATH}/events.`,
        );
      return unauthorized(request, authorization);
    }
    if (token === undefined) return off();
    return bearerMatches(authorization, token) ? undefined : unauthorized(request, authorization);
  }

  return {
    async handle(request) {
      try {
        const target = targetOf(request.url);
        // The page itself is public and holds no data (it asks for the token); only when the console is on.
        const page = token !== undefined && request.method.toUpperCase() === 'GET' ? consoleAsset(target.path) : undefined;
        if (page) return page;
        const refused = await refusal(request, target);
        if (refused) return refused;
        return await route(request, target, await storeOf());
      } catch (err) {
        if (err instanceof BadRequest) return errorResponse(err.status, err.message);
        if (err instanceof Refused) return err.response;
        logger?.error({ err, method: request.method, path: request.url.split('?', 1)[0] }, 'console request failed');
        return errorResponse(500, 'Internal error.');
      }
    },
  };
}

function headerOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

/** The eventId a path names, decoded; a malformed escape or an id that cannot be stored is the client's mistake. */
function eventIdOf(segment: string): string {
  let eventId: string;
  try {
    eventId = decodeURIComponent(segment);
  } catch {
    throw new BadRequest(400, 'The eventId in the path is not valid percent-encoded UTF-8.');
  }
  return parse(identifierText, eventId, 'eventId');
}

/** A request's body as text, read now if the adapter left it to be read; a body that cannot be read is refused. */
async function bodyText(request: AdminRequest): Promise<string> {
  if (typeof request.body !== 'function') return request.body ?? '';
  const read = await request.body();
  if ('refusal' in read) throw new Refused(read.refusal);
  return read.text;
}

function jsonBody(text: string): unknown {
  try {
    return JSON.parse(text || '{}');
  } catch {
    throw new BadRequest(400, 'The body must be JSON, e.g. {"status":"dead","type":"INVOICE_PAID"}.');
  }
}
