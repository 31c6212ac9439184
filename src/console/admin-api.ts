import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { HttpHandler, HttpResponse, RequestBody } from '../adapters/http-handler.js';
import { errorResponse, JSON_CONTENT_TYPE } from '../internal/error-response.js';
import { BodyBudget } from '../internal/limited-body.js';
import { sleep } from '../internal/sleep.js';
import { activityByMinute, MAX_EVENT_PAGE, pageEvents } from '../store/console-queries.js';
import { findById } from '../store/find-by-id.js';
import { DEFAULT_STORY_EVENTS, type ResourceStory, resourceStory } from '../store/resource-story.js';
import type { PayhooksDatabase } from '../store/database.js';
import { countEventsByTypeAndStatus, getEvent, oldestPendingEvent, type StoredEvent } from '../store/inbox.js';
import { countReplayable, previewReplay, type ReplaySelection, replayBatch, replayEvents } from '../store/maintenance.js';
import { EVENT_STATUSES, type EventStatus } from '../store/schema.js';
import { discardQuarantined, QuarantineError, releaseQuarantined } from '../receiver/release-quarantined.js';
import { getQuarantined, listQuarantined } from '../store/quarantine.js';
import type { HealthReport } from '../alarms/health-report.js';
import { resolveStep } from '../store/effect-steps.js';
import { consoleAsset } from './console-page.js';
import { FailureThrottle } from './failure-throttle.js';
import { type HandlerSource, issueRoutes } from './issue-routes.js';
import { accountId, arrivalPosition, filterText, identifierText } from './inputs.js';
import { maskPersonalData } from './mask.js';
import { adminTokenWeakness, bearerMatches } from './token.js';
import type { VerifyControl } from './verify-control.js';

/** The path under which the console's JSON API answers. */
export const ADMIN_API_PATH = '/admin/api';

/** A request as any HTTP framework can describe it (the adapters' `HttpRequest` is one); header names lower-case. */
export interface AdminRequest {
  method: string;
  /** The path and query, e.g. `/admin/api/events?status=dead`. */
  url: string;
  headers: Record<string, string | string[] | undefined>;
  /**
   * The body (POSTs only): its text, or a function that reads it, which the API calls only after the token is
   * checked and only on a route that takes a body, so that no unauthenticated request has its body read.
   */
  body?: string | (() => Promise<RequestBody>) | undefined;
  /**
   * The address of the connection's other end: failed authentications are counted and slowed per address (unknown
   * ones share one count), and the session token counts only from 127.0.0.1 or ::1.
   */
  clientAddress?: string | undefined;
}

/** Options of {@link createAdminApi}. */
export interface AdminApiOptions {
  store: PayhooksDatabase | (() => Promise<PayhooksDatabase>);
  /** The bearer token every request must carry; undefined turns the console off (every path answers 404). */
  token: string | undefined;
  /**
   * A second token, for this machine's command line only (requests from 127.0.0.1 or ::1), that `payhooks serve`
   * writes to a file only its user can read, so that `payhooks events` and `payhooks replay` can reach the embedded
   * database it holds. It opens the routes those commands use (GET events, GET one event, POST replay, GET stats) and
   * nothing else, whether or not the console is on.
   */
  localToken?: string | undefined;
  logger?: Logger | undefined;
  /**
   * The service's alarms and the gap sweeper's last run, for `GET /admin/api/health` (`startService` gives its alarm
   * monitor's); unset: that route answers 404 (alarms are evaluated by the standalone service only).
   */
  health?: (() => Promise<HealthReport>) | undefined;
  /** Verify runs, for `POST` and `GET /admin/api/verify`; unset: those routes answer 404. */
  verify?: VerifyControl | undefined;
  /**
   * Names where an issue's failures come from (a handler, or a sink of a kind, by the prefix its kind declares);
   * the service gives the sink registry's. Unset: every name is a handler's.
   */
  handlerSource?: ((handler: string) => HandlerSource) | undefined;
  /**
   * The Postgres mirror's schema, for the mirror rows of `GET /admin/api/story` (`startService` gives its configured
   * one, whichever process writes the mirror: it is read only where its tables exist); unset: stories have no mirror
   * rows (`mirror: null`).
   */
  mirrorSchema?: string | undefined;
}

/** The console's JSON API, framework-free: the adapters of `adapters/` (node:http, Express, Fetch) serve it. */
export interface AdminApi extends HttpHandler {
  handle(request: AdminRequest): Promise<HttpResponse>;
}

/** The console's API with an adapter for each framework (those of `adapters/`), as `hooks.admin()` returns it. */
export interface AdminHandlers {
  api: AdminApi;
  /** `http.createServer((req, res) => req.url?.startsWith('/admin/') ? admin.node()(req, res) : …)`. */
  node(): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** `app.use('/admin/api', admin.express())`, before or after `express.json()`. */
  express(): RequestHandler;
  /** `app.all('/admin/api/*', (c) => admin.fetch()(c.req.raw))`. */
  fetch(): (request: Request) => Promise<Response>;
}

/** The console's requests are small JSON documents; anything larger is refused unread. */
const MAX_ADMIN_BODY_BYTES = 64 * 1024;
/** The bytes of unfinished console request bodies held at once (only requests with a token get this far). */
const ADMIN_IN_FLIGHT_BODY_BYTES = 4 * 1024 * 1024;
/** The most ids one replay request names, and the largest sample or batch it asks for. */
const MAX_REPLAY_IDS = 10_000;

const REPLAYABLE = ['dead', 'invalid', 'ignored', 'done', 'needs-review'] as const;
// Years 1 to 9999 in UTC: outside them a JavaScript date is written as `0000-…` or `+010000-…`, which the database
// refuses (a 500 it would be, not the client's 400).
const EARLIEST = new Date('0001-01-01T00:00:00Z').getTime();
const LATEST = new Date('9999-12-31T23:59:59.999Z').getTime();
const isoDate = z.iso
  .datetime({ offset: true })
  .transform((text) => new Date(text))
  .refine((date) => date.getTime() >= EARLIEST && date.getTime() <= LATEST, 'must be between the years 0001 and 9999 (UTC)');
const revealFlag = z.enum(['true', 'false']).transform((value) => value === 'true');

const listQuery = z.strictObject({
  account: accountId.optional(),
  status: z.enum(EVENT_STATUSES).optional(),
  type: filterText.optional(),
  resource: filterText.optional(),
  id: filterText.optional(),
  from: isoDate.optional(),
  to: isoDate.optional(),
  cursor: arrivalPosition.optional(),
  limit: z.coerce.number().int().min(1).max(MAX_EVENT_PAGE).optional(),
  reveal: revealFlag.optional(),
});
const storyQuery = z.strictObject({
  resource: filterText,
  limit: z.coerce.number().int().min(1).max(5000).default(DEFAULT_STORY_EVENTS),
  reveal: revealFlag.optional(),
  account: accountId.optional(),
});
const findQuery = z.strictObject({ id: identifierText, account: accountId.optional() });
const statsQuery = z.strictObject({ hours: z.coerce.number().int().min(1).max(168).default(3), account: accountId.optional() });
const accountQuery = z.strictObject({ account: accountId.optional() });
const eventQuery = z.strictObject({ reveal: revealFlag.optional(), account: accountId.optional() });

const quarantineQuery = z.strictObject({
  state: z.enum(['held', 'released', 'discarded', 'all']).optional(),
  limit: z.coerce.number().int().min(1).max(MAX_EVENT_PAGE).optional(),
});

const releaseBody = z.strictObject({ unordered: z.boolean().optional() });

/**
 * `POST /admin/api/verify`: a sample per resource (default 20; null: everything, which may take long), repair, and
 * the account (default: each account in turn).
 */
const verifyBody = z.strictObject({
  sample: z.number().int().min(1).max(10_000).nullable().default(20),
  repair: z.boolean().default(false),
  account: accountId.optional(),
});

/**
 * `POST /admin/api/replay`: which events (every event in a state, of a type or not; or named ids, optionally only
 * while still in a state), and how: all at once (the console's button), only a preview (`dryRun`), or one batch
 * of a replay that works through them in order of arrival (`limit`, `after`, `through`; the command line's way).
 */
const replayBody = z
  .strictObject({
    status: z.enum(REPLAYABLE).optional(),
    type: identifierText.optional(),
    since: isoDate.optional(),
    until: isoDate.optional(),
    handler: identifierText.optional(),
    eventIds: z.array(identifierText).min(1).max(MAX_REPLAY_IDS).optional(),
    events: z
      .array(z.strictObject({ account: accountId, eventId: identifierText }))
      .min(1)
      .max(MAX_REPLAY_IDS)
      .optional(),
    account: accountId.optional(),
    dryRun: z.boolean().optional(),
    sample: z.number().int().min(1).max(MAX_REPLAY_IDS).optional(),
    limit: z.number().int().min(1).max(MAX_REPLAY_IDS).optional(),
    after: arrivalPosition.optional(),
    through: arrivalPosition.optional(),
    redoEffects: z.boolean().optional(),
  })
  .superRefine((body, ctx) => {
    const problem = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    const windowed = body.since !== undefined || body.until !== undefined;
    const named = body.eventIds !== undefined || body.events !== undefined;
    if (!named && body.status === undefined && !windowed) problem('status', 'give a status, a time window (since and until), or eventIds');
    if (body.eventIds !== undefined && body.events !== undefined) problem('events', 'give eventIds or events, not both');
    if (windowed && (body.since === undefined || body.until === undefined))
      problem(body.since ? 'until' : 'since', 'give both since and until');
    if (body.since && body.until && body.since.getTime() >= body.until.getTime()) problem('until', 'must be after since');
    for (const filter of ['type', 'since', 'until', 'handler'] as const)
      if (named && body[filter] !== undefined) problem(filter, 'selects among events by state or time; leave it out with eventIds');
    if (body.dryRun && body.limit !== undefined) problem('limit', 'is for a batch of a replay, not for a dry run');
    if (body.sample !== undefined && !body.dryRun) problem('sample', 'is for a dry run only');
    for (const bound of ['after', 'through'] as const)
      if (body[bound] !== undefined && body.limit === undefined) problem(bound, 'is for a batch of a replay: give limit too');
  });

const resolveBody = z.strictObject({
  step: z.string().min(1).max(200),
  handler: identifierText.optional(),
  resolution: z.enum(['done', 'redo']),
});

const ok = (value: unknown, status = 200): HttpResponse => ({
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
  constructor(readonly response: HttpResponse) {
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

/** Which token let a request in: the console's, or the command line's session token. */
type Via = 'console token' | 'session token';

/** What a route's answer is made from. */
interface RouteCall {
  request: AdminRequest;
  options: AdminApiOptions;
  store: PayhooksDatabase;
  query: Record<string, string>;
  /** The path's parameter (an eventId), still percent-encoded. */
  param: string | undefined;
  via: Via;
}

/** One route of the API. */
interface AdminRoute {
  method: 'GET' | 'POST';
  /** Matches the path (trailing slashes removed); its one group, if any, is the eventId. */
  pattern: RegExp;
  /** Whether the session token opens it: the routes `payhooks events` and `payhooks replay` use beside serve. */
  commandLine: boolean;
  answer(call: RouteCall, logger: Logger | undefined): Promise<HttpResponse>;
}

// The routes marked `commandLine` are all the session token opens: those `payhooks events` and `payhooks replay` use
// beside a running serve (docs/cli.md). Everything else needs the console token.
const ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    pattern: /^\/admin\/api\/events$/,
    commandLine: true,
    async answer({ store, query, via }, logger) {
      const filter = parse(listQuery, query, 'query');
      const page = await pageEvents(store, {
        account: filter.account,
        status: filter.status,
        eventType: filter.type,
        resourceKey: filter.resource,
        eventIdPrefix: filter.id,
        receivedFrom: filter.from,
        receivedBefore: filter.to,
        cursor: filter.cursor,
        limit: filter.limit,
      });
      const reveal = filter.reveal === true;
      if (reveal && page.events.length > 0)
        logger?.info({ count: page.events.length, via }, 'console: personal data of a page of events revealed');
      return ok({ events: reveal ? page.events : page.events.map(summary), nextCursor: page.nextCursor, masked: !reveal });
    },
  },
  {
    method: 'GET',
    pattern: /^\/admin\/api\/events\/([^/]+)$/,
    commandLine: true,
    async answer({ store, query, param, via }, logger) {
      const asked = parse(eventQuery, query, 'query');
      const reveal = asked.reveal === true;
      const eventId = eventIdOf(param!);
      const event = await getEvent(store, eventId, asked.account);
      if (!event) throw new BadRequest(404, `No event ${eventId} is stored${asked.account ? ` for account ${asked.account}` : ''}.`);
      if (reveal) logger?.info({ eventId, via }, 'console: personal data of an event revealed');
      const rawBody = reveal ? event.rawBody : maskPersonalData(event.rawBody);
      const handlerAttempts = reveal
        ? event.handlerAttempts
        : event.handlerAttempts.map((a) => ({ ...a, error: a.error === null ? null : maskPersonalData(a.error) }));
      const effectSteps = reveal
        ? event.effectSteps
        : event.effectSteps.map((x) => ({
            ...x,
            result: x.result === null ? null : maskPersonalData(x.result),
            error: x.error === null ? null : maskPersonalData(x.error),
          }));
      return ok({ ...(reveal ? event : summary(event)), rawBody, handlerAttempts, effectSteps, masked: !reveal });
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/api\/events\/([^/]+)\/replay$/,
    commandLine: false,
    async answer({ store, param, query }, logger) {
      const eventId = eventIdOf(param!);
      const { account } = parse(accountQuery, query, 'query');
      const event = await getEvent(store, eventId, account);
      if (!event) throw new BadRequest(404, `No event ${eventId} is stored${account ? ` for account ${account}` : ''}.`);
      // The event shown: of its account only (another account may hold the same eventId).
      const replayed = await replayEvents(store, { eventIds: [eventId], account: event.account });
      if (replayed.length === 0)
        throw new BadRequest(409, `Event ${eventId} is ${event.status}: only a finished or failed event is replayed.`);
      logger?.info({ eventId, was: event.status }, 'console: event replayed');
      return ok({ replayed });
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/api\/events\/([^/]+)\/effects\/resolve$/,
    commandLine: true,
    async answer({ request, store, param, via }, logger) {
      const eventId = eventIdOf(param!);
      const body = parse(resolveBody, jsonBody(await bodyText(request)), 'body');
      const outcome = await resolveStep(store, { eventId, step: body.step, handler: body.handler }, body.resolution);
      if (outcome.resolved)
        logger?.info(
          { eventId, handler: outcome.handler, step: body.step, resolution: body.resolution, requeued: outcome.requeued, via },
          'console: effect step resolved',
        );
      return ok(outcome);
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/api\/replay$/,
    commandLine: true,
    async answer({ request, store, via }, logger) {
      const body = parse(replayBody, jsonBody(await bodyText(request)), 'body');
      const which = selectionOf(body);
      const described = {
        account: body.account,
        status: body.status,
        eventType: body.type,
        since: body.since,
        until: body.until,
        handler: body.handler,
        named: body.eventIds?.length ?? body.events?.length,
        via,
      };
      if (body.dryRun) return ok(await previewReplay(store, which, body.sample ?? 10));
      if (body.limit !== undefined) {
        const batch = await replayBatch(store, which, { limit: body.limit, after: body.after, through: body.through });
        if (batch.eventIds.length > 0) logger?.info({ ...described, count: batch.eventIds.length }, 'console: a batch of events replayed');
        return ok({ replayed: batch.eventIds.length, eventIds: batch.eventIds, visited: batch.visited, last: batch.last });
      }
      const replayed = await replayEvents(store, which);
      logger?.info({ ...described, count: replayed.length }, 'console: events replayed');
      return ok({ replayed: replayed.length, eventIds: replayed, left: await countReplayable(store, which) });
    },
  },
  {
    method: 'GET',
    pattern: /^\/admin\/api\/quarantine$/,
    commandLine: true,
    async answer({ store, query }) {
      const { state, limit } = parse(quarantineQuery, query, 'query');
      return ok({ deliveries: await listQuarantined(store, { state, limit }) });
    },
  },
  {
    method: 'GET',
    pattern: /^\/admin\/api\/quarantine\/(\d{1,18})$/,
    commandLine: true,
    async answer({ store, query, param, via }, logger) {
      const reveal = query.reveal === 'true';
      const held = await getQuarantined(store, param!);
      if (!held) throw new BadRequest(404, `No quarantined delivery #${param}.`);
      if (reveal) logger?.info({ quarantineId: held.id, via }, 'console: personal data of a quarantined delivery revealed');
      const { rawBody, ...rest } = held;
      // The bytes exactly (base64), and as text for reading: they may not be UTF-8 at all.
      const text = new TextDecoder().decode(rawBody);
      return ok({
        ...rest,
        rawBodyText: reveal ? text : maskPersonalData(text),
        rawBodyBase64: reveal ? Buffer.from(rawBody).toString('base64') : null,
        masked: !reveal,
      });
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/api\/quarantine\/(\d{1,18})\/release$/,
    commandLine: true,
    async answer({ request, store, param, via }, logger) {
      const text = await bodyText(request);
      const { unordered } = parse(releaseBody, text.trim() === '' ? {} : jsonBody(text), 'body');
      try {
        const released = await releaseQuarantined(store, param!, { unordered });
        logger?.info(
          { quarantineId: param, eventId: released.eventId, queued: released.queued, via },
          'console: quarantined delivery released',
        );
        return ok(released);
      } catch (err) {
        if (err instanceof QuarantineError) throw new BadRequest(err.status, err.message);
        throw err;
      }
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/api\/quarantine\/(\d{1,18})\/discard$/,
    commandLine: true,
    async answer({ store, param, via }, logger) {
      try {
        await discardQuarantined(store, param!);
      } catch (err) {
        if (err instanceof QuarantineError) throw new BadRequest(err.status, err.message);
        throw err;
      }
      logger?.info({ quarantineId: param, via }, 'console: quarantined delivery discarded');
      return ok({ discarded: param });
    },
  },
  {
    method: 'GET',
    pattern: /^\/admin\/api\/health$/,
    commandLine: false,
    async answer({ options }) {
      if (!options.health)
        throw new BadRequest(404, 'No alarms are evaluated here: GET /admin/api/health is served by payhooks serve (startService).');
      return ok(await options.health());
    },
  },
  {
    method: 'GET',
    pattern: /^\/admin\/api\/verify$/,
    commandLine: false,
    async answer({ options, query }) {
      if (!options.verify) throw new BadRequest(404, 'Verify runs are started by payhooks serve (startService); this API has none.');
      const { account } = parse(accountQuery, query, 'query');
      return ok(await options.verify.state(account));
    },
  },
  {
    method: 'POST',
    pattern: /^\/admin\/api\/verify$/,
    commandLine: false,
    async answer({ request, options }) {
      if (!options.verify) throw new BadRequest(404, 'Verify runs are started by payhooks serve (startService); this API has none.');
      const text = await bodyText(request);
      const wanted = parse(verifyBody, text.trim() === '' ? {} : jsonBody(text), 'body');
      const started = options.verify.start(wanted);
      if (typeof started === 'string') throw new BadRequest(409, `No verify was started: ${started}`);
      return ok({ running: started }, 202);
    },
  },
  {
    method: 'GET',
    pattern: /^\/admin\/api\/story$/,
    commandLine: true,
    async answer({ store, query, options, via }, logger) {
      const { resource, limit, reveal, account } = parse(storyQuery, query, 'query');
      let story: ResourceStory;
      try {
        story = await resourceStory(store, resource, { mirrorSchema: options.mirrorSchema, limit, account });
      } catch (err) {
        if (err instanceof RangeError) throw new BadRequest(400, err.message);
        throw err;
      }
      if (reveal && story.events.length > 0) logger?.info({ resource: story.resource, via }, 'console: personal data of a story revealed');
      return ok({ ...(reveal ? story : maskStory(story)), masked: reveal !== true });
    },
  },
  {
    method: 'GET',
    pattern: /^\/admin\/api\/find$/,
    commandLine: true,
    async answer({ store, query }) {
      const { id, account } = parse(findQuery, query, 'query');
      const found = await findById(store, id, account);
      if (!found) throw new BadRequest(404, `Nothing is stored under ${JSON.stringify(id)}: no eventId, sender's id or quarantine number.`);
      return ok(found);
    },
  },
  {
    method: 'GET',
    pattern: /^\/admin\/api\/stats$/,
    commandLine: true,
    async answer({ store, query }) {
      const { hours, account } = parse(statsQuery, query, 'query');
      const [byTypeAndStatus, oldest, activity] = await Promise.all([
        countEventsByTypeAndStatus(store, account),
        oldestPendingEvent(store),
        activityByMinute(store, hours),
      ]);
      const byStatus = Object.fromEntries(EVENT_STATUSES.map((status) => [status, 0])) as Record<EventStatus, number>;
      for (const { status, count } of byTypeAndStatus) byStatus[status] += count;
      return ok({ byStatus, byTypeAndStatus, oldestPending: oldest ?? null, hours, activity });
    },
  },
  // Failures grouped into issues (issue-routes.ts).
  ...issueRoutes({
    ok,
    refuse: (status, message) => new BadRequest(status, message),
    parse,
    body: async (request) => jsonBody(await bodyText(request)),
  }),
];

/**
 * The operator console's API under `/admin/api/`: events with filters and cursor pages, one event in full (personal
 * data masked unless `?reveal=true`, which is logged), replay of one event, of named events or of every event in a
 * state (and of a type), at once or in batches, and counts; with `health` and `verify` from the service, the alarms and
 * verify runs. Every request needs `Authorization: Bearer <token>`,
 * compared in constant time; without a token the console is off and every path answers 404. The session token of
 * `payhooks serve` opens the command line's routes from loopback, console on or off. Failed tokens from one address
 * are answered more and more slowly ({@link FailureThrottle}). `handle` never rejects: a bad request is a 4xx with
 * its reason, anything else a 500 that is logged. Mount it with the adapters of `adapters/`.
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

  /** The answer to a request whose token does not open what it asks for; failures from one address are slowed. */
  async function unauthorized(request: AdminRequest, authorization: string | undefined): Promise<HttpResponse> {
    // Only a request that offers a token is a guess; one without (a health checker, a curious browser) is not counted.
    if (authorization !== undefined) await sleep(throttle.failed(request.clientAddress));
    const refused = errorResponse(401, 'Unauthorized: send the console token as Authorization: Bearer <PAYHOOKS_ADMIN_TOKEN>.');
    return { ...refused, headers: { ...refused.headers, 'www-authenticate': 'Bearer realm="payhooks"' } };
  }

  /** Who gets in, decided before any body is read or the database is asked anything: the token that did, or the refusal. */
  async function admission(request: AdminRequest, target: Target, route: AdminRoute | undefined): Promise<Via | HttpResponse> {
    const authorization = headerOf(request.headers.authorization);
    if (route?.commandLine && localToken !== undefined && isLoopback(request.clientAddress) && bearerMatches(authorization, localToken))
      return 'session token';
    if (token === undefined) return errorResponse(404, `Nothing at ${target.path || '/'}.`);
    return bearerMatches(authorization, token) ? 'console token' : unauthorized(request, authorization);
  }

  return {
    maxBodyBytes: MAX_ADMIN_BODY_BYTES,
    bodyBudget: new BodyBudget(ADMIN_IN_FLIGHT_BODY_BYTES),
    name: 'console',
    logger,
    async handle(request) {
      try {
        const target = targetOf(request.url);
        const method = request.method.toUpperCase();
        // The page itself is public and holds no data (it asks for the token); only when the console is on.
        const page = token !== undefined && method === 'GET' ? consoleAsset(target.path) : undefined;
        if (page) return page;
        const match = routeOf(method, target.path);
        const via = await admission(request, target, match?.route);
        if (typeof via !== 'string') return via;
        if (!target.valid) throw new BadRequest(400, 'The request target is not a valid path and query.');
        if (!match) {
          const known = ROUTES.some((route) => route.pattern.test(target.path));
          throw new BadRequest(known ? 405 : 404, known ? `${method} is not allowed on ${target.path}.` : `Nothing at ${target.path}.`);
        }
        const call = { request, options, store: await storeOf(), query: target.query, param: match.param, via };
        return await match.route.answer(call, logger);
      } catch (err) {
        if (err instanceof BadRequest) return errorResponse(err.status, err.message);
        if (err instanceof Refused) return err.response;
        logger?.error({ err, method: request.method, path: request.url.split('?', 1)[0] }, 'console request failed');
        return errorResponse(500, 'Internal error.');
      }
    },
  };
}

/** The store's selection for a replay request's body. */
function selectionOf(body: z.infer<typeof replayBody>): ReplaySelection {
  const how = { account: body.account, redoEffects: body.redoEffects };
  if (body.eventIds) return { eventIds: [...new Set(body.eventIds)], status: body.status, ...how };
  if (body.events) return { events: body.events, status: body.status, ...how };
  const filter = { eventType: body.type, handler: body.handler, ...how };
  if (body.since && body.until) return { ...filter, status: body.status, since: body.since, until: body.until };
  return { ...filter, status: body.status! };
}

/** A story with personal data masked: errors, effect results, and the mirror's rows (emails, phone numbers). */
function maskStory(story: ResourceStory): ResourceStory {
  const masked = (text: string | null) => (text === null ? null : maskPersonalData(text));
  return {
    ...story,
    events: story.events.map((event) => ({
      ...event,
      lastError: masked(event.lastError),
      handlerAttempts: event.handlerAttempts.map((a) => ({ ...a, error: masked(a.error) })),
      effectSteps: event.effectSteps.map((x) => ({ ...x, result: masked(x.result), error: masked(x.error) })),
    })),
    mirror: story.mirror?.map((record) => ({ ...record, row: JSON.parse(maskPersonalData(JSON.stringify(record.row))) })) ?? null,
  };
}

/** The route that answers `method` on `path`, with its path parameter. */
function routeOf(method: string, path: string): { route: AdminRoute; param: string | undefined } | undefined {
  for (const route of ROUTES) {
    const match = route.method === method ? route.pattern.exec(path) : null;
    if (match) return { route, param: match[1] };
  }
  return undefined;
}

/** Whether an address is this machine's own (IPv4 or IPv6 loopback, or IPv4 loopback mapped to IPv6). */
function isLoopback(address: string | undefined): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
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
  if ('consumed' in read)
    throw new Refused(errorResponse(500, 'The request body was read by an earlier middleware before the console could read it.'));
  if ('bytes' in read) return read.bytes.toString('utf8');
  // What a body parser of the app made of it: a JSON parser's object, a text parser's string, express.raw()'s bytes.
  const { parsed } = read;
  if (parsed === undefined) return '';
  if (typeof parsed === 'string') return parsed;
  if (parsed instanceof Uint8Array) return Buffer.from(parsed).toString('utf8');
  return JSON.stringify(parsed);
}

function jsonBody(text: string): unknown {
  try {
    return JSON.parse(text || '{}');
  } catch {
    throw new BadRequest(400, 'The body must be JSON, e.g. {"status":"dead","type":"INVOICE_PAID"}.');
  }
}
