import type { Logger } from 'pino';
import { z } from 'zod';
import { errorResponse, JSON_CONTENT_TYPE, type JsonResponse } from '../internal/error-response.js';
import { activityByMinute, pageEvents } from '../store/console-queries.js';
import type { PayhooksDatabase } from '../store/database.js';
import { countEventsByStatus, getEvent, oldestPendingEvent, type StoredEvent } from '../store/inbox.js';
import { countReplayable, replayEvents } from '../store/maintenance.js';
import { EVENT_STATUSES } from '../store/schema.js';
import { consoleAsset } from './console-page.js';
import { InboxOpError, runInboxOp } from './inbox-ops.js';
import { maskPersonalData } from './mask.js';
import { adminTokenWeakness, bearerMatches } from './token.js';

/** The path under which the console's JSON API answers. */
export const ADMIN_API_PATH = '/admin/api';

/** A request as any HTTP framework can describe it; header names lower-case. */
export interface AdminRequest {
  method: string;
  /** The path and query, e.g. `/admin/api/events?status=dead`. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /** The body as text (POSTs only); empty when there is none. */
  body?: string | undefined;
  /** Whether the connection came from this machine (127.0.0.1 or ::1): only then does `localToken` count. */
  fromLoopback?: boolean | undefined;
}

/** Options of {@link createAdminApi}. */
export interface AdminApiOptions {
  store: PayhooksDatabase | (() => Promise<PayhooksDatabase>);
  /** The bearer token every request must carry; undefined turns the console off (every path answers 404). */
  token: string | undefined;
  /**
   * A second token, for this machine's command line only (requests with `fromLoopback`), that `payhooks serve`
   * writes to a file only its user can read, so `payhooks events` can reach the embedded database it holds. It
   * opens the API whether or not the console is on.
   */
  localToken?: string | undefined;
  logger?: Logger | undefined;
}

/** The console's JSON API, framework-free: adapters turn requests into {@link AdminRequest}s. */
export interface AdminApi {
  handle(request: AdminRequest): Promise<JsonResponse>;
}

const REPLAYABLE = ['dead', 'invalid', 'ignored', 'done'] as const;
const isoDate = z.iso.datetime({ offset: true }).transform((text) => new Date(text));

const listQuery = z.strictObject({
  status: z.enum(EVENT_STATUSES).optional(),
  type: z.string().min(1).optional(),
  resource: z.string().min(1).optional(),
  id: z.string().min(1).optional(),
  from: isoDate.optional(),
  to: isoDate.optional(),
  cursor: z.string().regex(/^\d+$/, 'expected the nextCursor of a page').optional(),
  limit: z.coerce.number().int().min(1).max(500).optional(),
});
const bulkReplayBody = z.strictObject({ status: z.enum(REPLAYABLE), type: z.string().min(1).optional() });
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

/**
 * The operator console's API under `/admin/api/`: events with filters and cursor pages, one event in full (personal
 * data masked unless `?reveal=true`), replay of one event or of every event in a state (and of a type), and counts
 * over time. Every request needs `Authorization: Bearer <token>`, compared in constant time; without a token the
 * console is off and every path answers 404.
 *
 * @example
 * const admin = createAdminApi({ store, token: process.env.PAYHOOKS_ADMIN_TOKEN });
 * const { status, body } = await admin.handle({ method: 'GET', url: '/admin/api/events?status=dead', headers });
 */
export function createAdminApi(options: AdminApiOptions): AdminApi {
  const { token } = options;
  if (token !== undefined) {
    const weakness = adminTokenWeakness(token);
    if (weakness) throw new RangeError(`The console token (PAYHOOKS_ADMIN_TOKEN) is too weak: ${weakness}.`);
  }
  const storeOf = typeof options.store === 'function' ? options.store : () => Promise.resolve(options.store as PayhooksDatabase);

  async function route(request: AdminRequest, store: PayhooksDatabase): Promise<JsonResponse> {
    const url = new URL(request.url, 'http://console.invalid');
    const path = url.pathname.replace(/\/+$/, '');
    const query = Object.fromEntries(url.searchParams);
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
      const eventId = decodeURIComponent(eventPath[1]!);
      const event = await getEvent(store, eventId);
      if (!event) throw new BadRequest(404, `No event ${eventId} is stored.`);
      const reveal = query.reveal === 'true';
      if (reveal) options.logger?.info({ eventId }, 'console: personal data of an event revealed');
      const rawBody = reveal ? event.rawBody : maskPersonalData(event.rawBody);
      return ok({ ...(reveal ? event : summary(event)), rawBody, masked: !reveal });
    }
    if (eventPath?.[2] && method === 'POST') {
      const eventId = decodeURIComponent(eventPath[1]!);
      const event = await getEvent(store, eventId);
      if (!event) throw new BadRequest(404, `No event ${eventId} is stored.`);
      const replayed = await replayEvents(store, { eventIds: [eventId] });
      if (replayed.length === 0)
        throw new BadRequest(409, `Event ${eventId} is ${event.status}: only a finished or failed event is replayed.`);
      options.logger?.info({ eventId, was: event.status }, 'console: event replayed');
      return ok({ replayed });
    }
    if (path === `${ADMIN_API_PATH}/replay` && method === 'POST') {
      const selection = parse(bulkReplayBody, jsonBody(request.body), 'body');
      const which = { status: selection.status, eventType: selection.type };
      const replayed = await replayEvents(store, which);
      options.logger?.info({ ...which, count: replayed.length }, 'console: events replayed');
      return ok({ replayed: replayed.length, eventIds: replayed, left: await countReplayable(store, which) });
    }
    if (path === `${ADMIN_API_PATH}/inbox` && method === 'POST') {
      const call = jsonBody(request.body);
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

  return {
    async handle(request) {
      // The page itself is public and holds no data (it asks for the token); only when the console is on.
      const page = token !== undefined && request.method.toUpperCase() === 'GET' ? consoleAsset(request.url.split('?', 1)[0]!) : undefined;
      if (page) return page;
      const authorization = headerOf(request.headers.authorization);
      const local = options.localToken !== undefined && request.fromLoopback === true && bearerMatches(authorization, options.localToken);
      if (!local && token === undefined) return errorResponse(404, `Nothing at ${request.url.split('?', 1)[0]}.`);
      if (!local && !bearerMatches(authorization, token!)) {
        const refused = errorResponse(401, 'Unauthorized: send the console token as Authorization: Bearer <PAYHOOKS_ADMIN_TOKEN>.');
        return { ...refused, headers: { ...refused.headers, 'www-authenticate': 'Bearer realm="payhooks"' } };
      }
      try {
        return await route(request, await storeOf());
      } catch (err) {
        if (err instanceof BadRequest) return errorResponse(err.status, err.message);
        options.logger?.error({ err, method: request.method, path: request.url.split('?', 1)[0] }, 'console request failed');
        return errorResponse(500, 'Internal error.');
      }
    },
  };
}

function headerOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function jsonBody(text: string | undefined): unknown {
  try {
    return JSON.parse(text || '{}');
  } catch {
    throw new BadRequest(400, 'The body must be JSON, e.g. {"status":"dead","type":"INVOICE_PAID"}.');
  }
}
