// A typed client of the console's REST API (docs/admin.md), for the command line beside a running serve: each
// method is one route, and each answer is checked against the shape the route documents (dates revived), so what
// the command line prints from it is what it prints from the database itself.
import { z } from 'zod';
import type { ReleaseOptions, ReleaseOutcome } from '../receiver/release-quarantined.js';
import { QUARANTINE_KINDS, type QuarantinedDelivery, type QuarantinedDetail, type QuarantineFilter } from '../store/quarantine.js';
import { PayhooksError } from '../errors.js';
import type { EventPage } from '../store/console-queries.js';
import type { OldestPending, StoredEventDetail, TypeStatusCount } from '../store/inbox.js';
import type { ReplayBatch, ReplayPreview, ReplaySelection } from '../store/maintenance.js';
import type { ResolveOutcome, StepResolution } from '../store/effect-steps.js';
import type { FoundId } from '../store/find-by-id.js';
import type { ResourceStory } from '../store/resource-story.js';
import { EVENT_STATUSES, type EventStatus } from '../store/schema.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';

/** A request the console's API answered with an error, or did not answer at all (`status` undefined). */
export class AdminApiError extends PayhooksError {
  constructor(
    message: string,
    /** The HTTP status, or undefined when no answer came. */
    readonly status: number | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const date = z.iso.datetime({ offset: true }).transform((text) => new Date(text));
// In the order of store/inbox.ts's objects, so that JSON printed from an answer is byte for byte the same.
// `account` defaults for a serve that predates accounts (every event then was the default account's).
const account = z.string().default(DEFAULT_ACCOUNT);
const storedEvent = z.object({
  account,
  eventId: z.string(),
  eventType: z.string(),
  resourceKey: z.string().nullable(),
  status: z.enum(EVENT_STATUSES),
  attempts: z.number(),
  deliveries: z.number(),
  lastError: z.string().nullable(),
  receivedAt: date,
  nextAttemptAt: date,
  processedAt: date.nullable(),
});
const eventPage = z.object({ events: z.array(storedEvent), nextCursor: z.string().nullable() });
const handlerAttempt = z.object({
  handler: z.string(),
  attempt: z.number().nullable(),
  startedAt: date.nullable(),
  endedAt: date,
  durationMs: z.number().nullable(),
  outcome: z.enum(['completed', 'failed']),
  error: z.string().nullable(),
});
const effectStep = z.object({
  account,
  eventId: z.string(),
  receivedAt: date,
  handler: z.string(),
  step: z.string(),
  idempotencyKey: z.string(),
  idempotent: z.boolean(),
  state: z.enum(['started', 'completed', 'failed', 'needs-review', 'redo']),
  attempt: z.number(),
  calls: z.number(),
  result: z.string().nullable(),
  error: z.string().nullable(),
  startedAt: date,
  endedAt: date.nullable(),
  resolution: z.enum(['done', 'redo']).nullable(),
  resolvedAt: date.nullable(),
});
const eventDetail = storedEvent.extend({
  rawBody: z.string(),
  headers: z.record(z.string(), z.string()),
  completedHandlers: z.array(z.string()),
  givenUpHandlers: z.array(z.string()),
  handlerAttempts: z.array(handlerAttempt).default([]),
  effectSteps: z.array(effectStep).default([]),
});
// In the order of store/resource-story.ts's objects, so that `events history --json` prints the same either way.
const story = z.object({
  resource: z.string(),
  keys: z.array(z.string()),
  events: z.array(
    storedEvent.extend({
      handlerAttempts: z.array(handlerAttempt),
      completedHandlers: z.array(z.string()),
      givenUpHandlers: z.array(z.string()),
      effectSteps: z.array(effectStep),
    }),
  ),
  truncated: z.boolean(),
  mirror: z.array(z.object({ table: z.string(), id: z.string(), row: z.record(z.string(), z.unknown()) })).nullable(),
});
const found = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('event'), account, eventId: z.string(), accounts: z.array(account) }),
  // accounts: absent from a server older than the listing of every account; then the one found is all that is known.
  z.object({ kind: z.literal('sender-id'), account, eventId: z.string(), header: z.string(), accounts: z.array(account).optional() }),
  z.object({
    kind: z.literal('quarantine'),
    account,
    quarantineId: z.string(),
    eventId: z.string().nullable(),
    state: z.enum(['held', 'released', 'discarded']),
  }),
]);
const resolved = z.discriminatedUnion('resolved', [
  z.object({ resolved: z.literal(true), account, handler: z.string(), step: z.string(), remaining: z.number(), requeued: z.boolean() }),
  z.object({
    resolved: z.literal(false),
    reason: z.enum(['not-found', 'not-held', 'ambiguous']),
    handlers: z.array(z.string()).optional(),
    accounts: z.array(z.string()).optional(),
    state: z.enum(['started', 'completed', 'failed', 'needs-review', 'redo']).optional(),
  }),
]);
const quarantined = z.object({
  id: z.string(),
  account,
  kind: z.enum(QUARANTINE_KINDS),
  reason: z.string(),
  eventId: z.string().nullable(),
  eventType: z.string().nullable(),
  state: z.enum(['held', 'released', 'discarded']),
  deliveries: z.number(),
  receivedAt: date,
  lastReceivedAt: date,
  releasedEventId: z.string().nullable(),
  resolvedAt: date.nullable(),
});
const quarantineList = z.object({ deliveries: z.array(quarantined) });
const quarantinedDetail = quarantined.extend({
  headers: z.record(z.string(), z.string()),
  rawBodyBase64: z.string(),
});
const released = z.object({ eventId: z.string(), queued: z.boolean(), droppedHeaders: z.array(z.string()) });
const stats = z.object({
  byTypeAndStatus: z.array(z.object({ eventType: z.string(), status: z.enum(EVENT_STATUSES), count: z.number() })),
  oldestPending: z
    .object({
      account,
      eventId: z.string(),
      receivedAt: date,
      ageMs: z.number(),
      // Defaults for a server from before these fields.
      resourceKey: z.string().nullable().default(null),
      queuedForResource: z.number().default(1),
    })
    .nullable(),
});
const preview = z.object({
  count: z.number(),
  sample: z.array(z.string()),
  through: z.string().nullable(),
  effects: z
    .object({
      completed: z.number(),
      needsReview: z.number(),
      notCompleted: z.number(),
      sample: z.array(z.object({ eventId: z.string(), handler: z.string(), step: z.string(), state: z.string() })),
    })
    .default({ completed: 0, needsReview: 0, notCompleted: 0, sample: [] }),
});
const batch = z.object({ eventIds: z.array(z.string()), visited: z.number(), last: z.string().nullable() });

/** Counts of `GET /admin/api/stats` the command line reads. */
export interface AdminStats {
  byTypeAndStatus: TypeStatusCount[];
  oldestPending: OldestPending | null;
}

/** Filters and page of `GET /admin/api/events`. */
export interface AdminEventQuery {
  /** One account's events; default every account's. */
  account?: string | undefined;
  status?: EventStatus | undefined;
  type?: string | undefined;
  cursor?: string | undefined;
  /** 1 to 500. */
  limit?: number | undefined;
  /** Personal data unmasked (and the reveal logged by the console). */
  reveal?: boolean | undefined;
}

/** Options of {@link createAdminClient}. */
export interface AdminClientOptions {
  /** Where the service answers, e.g. `http://127.0.0.1:8787` (without `/admin/api`). */
  url: string;
  /** The console token, or the session token of `payhooks serve` for this machine's command line. */
  token: string;
  /** How long one request may take. Default 60 s. */
  timeoutMs?: number | undefined;
}

/** The console's REST API, one method a route (docs/admin.md). */
export interface AdminClient {
  /** `GET /admin/api/events`: one page, newest first. */
  listEvents(query: AdminEventQuery): Promise<EventPage>;
  /** `GET /admin/api/events/{eventId}`; undefined when no such event is stored (404). */
  getEvent(eventId: string, options: { reveal: boolean; account?: string | undefined }): Promise<StoredEventDetail | undefined>;
  /** `GET /admin/api/stats`: the counts per type and state (of one account, or all), and the oldest pending event. */
  stats(account?: string): Promise<AdminStats>;
  /** `GET /admin/api/quarantine`: quarantined deliveries, newest first. */
  listQuarantined(filter: QuarantineFilter): Promise<QuarantinedDelivery[]>;
  /** `GET /admin/api/quarantine/{id}?reveal=true`: one, with its exact bytes; undefined when there is none (404). */
  getQuarantined(id: string): Promise<QuarantinedDetail | undefined>;
  /** `POST /admin/api/quarantine/{id}/release`. */
  releaseQuarantined(id: string, options: ReleaseOptions): Promise<ReleaseOutcome>;
  /** `POST /admin/api/quarantine/{id}/discard`. */
  discardQuarantined(id: string): Promise<void>;
  /** `POST /admin/api/events/{id}/effects/resolve`: an operator's answer to a step held for review. */
  resolveStep(ref: { eventId: string; step: string; handler?: string | undefined }, resolution: StepResolution): Promise<ResolveOutcome>;
  /** `GET /admin/api/story?reveal=true`: a resource's story, personal data as stored. */
  story(resource: string, options: { limit?: number | undefined; account?: string | undefined }): Promise<ResourceStory>;
  /** `GET /admin/api/find`: what an id names (in one account, or any); undefined when nothing does (404). */
  find(id: string, account?: string): Promise<FoundId | undefined>;
  /** `POST /admin/api/replay` with `dryRun`: how many events a replay would re-queue, a sample, and its bound. */
  previewReplay(which: ReplaySelection, sampleSize: number): Promise<ReplayPreview>;
  /** `POST /admin/api/replay` with `limit`: one batch of a replay in order of arrival. */
  replayBatch(
    which: ReplaySelection,
    page: { limit: number; after?: string | undefined; through?: string | undefined },
  ): Promise<ReplayBatch>;
}

/**
 * A client of the console's API at `url`, with a bearer token.
 *
 * @example
 * const admin = createAdminClient({ url: 'http://127.0.0.1:8787', token: process.env.PAYHOOKS_ADMIN_TOKEN! });
 * const { events } = await admin.listEvents({ status: 'dead', limit: 50 });
 */
export function createAdminClient(options: AdminClientOptions): AdminClient {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const base = options.url.replace(/\/+$/, '');

  /** One request; an answer of any status comes back, no answer at all is an AdminApiError without a status. */
  async function send(method: 'GET' | 'POST', path: string, body?: unknown): Promise<{ status: number; text: string }> {
    try {
      const response = await fetch(`${base}/admin/api${path}`, {
        method,
        headers: {
          authorization: `Bearer ${options.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      return { status: response.status, text: await response.text() };
    } catch (cause) {
      throw new AdminApiError(`The console API at ${base} does not answer: ${PayhooksError.describe(cause)}`, undefined, { cause });
    }
  }

  /** A 2xx answer read with `schema`; anything else an AdminApiError that quotes the answer. */
  async function call<T>(schema: z.ZodType<T>, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T> {
    return decode(schema, method, path, await send(method, path, body));
  }

  function decode<T>(schema: z.ZodType<T>, method: string, path: string, answer: { status: number; text: string }): T {
    const route = `${method} /admin/api${path.split('?', 1)[0]}`;
    if (answer.status < 200 || answer.status > 299)
      throw new AdminApiError(`${route} answered ${answer.status}: ${answer.text}`, answer.status);
    let json: unknown;
    try {
      json = JSON.parse(answer.text);
    } catch {
      throw new AdminApiError(`${route} answered ${answer.status} with a body that is not JSON.`, answer.status);
    }
    const parsed = schema.safeParse(json);
    if (!parsed.success)
      throw new AdminApiError(`${route} answered in a shape this payhooks does not read: ${parsed.error.message}`, answer.status);
    return parsed.data;
  }

  const selection = (which: ReplaySelection) => ({
    ...('eventIds' in which
      ? { eventIds: which.eventIds, status: which.status }
      : 'events' in which
        ? { events: which.events, status: which.status }
        : {
            status: which.status,
            type: which.eventType,
            since: 'since' in which ? which.since?.toISOString() : undefined,
            until: 'until' in which ? which.until?.toISOString() : undefined,
            handler: which.handler,
          }),
    ...(which.account !== undefined ? { account: which.account } : {}),
    ...(which.redoEffects ? { redoEffects: true } : {}),
  });

  return {
    listEvents({ account, status, type, cursor, limit, reveal }) {
      const query = new URLSearchParams();
      for (const [name, value] of Object.entries({ account, status, type, cursor, limit, reveal }))
        if (value !== undefined) query.set(name, String(value));
      return call(eventPage, 'GET', `/events?${query}`);
    },
    async getEvent(eventId, { reveal, account }) {
      const query = new URLSearchParams();
      if (reveal) query.set('reveal', 'true');
      if (account !== undefined) query.set('account', account);
      const path = `/events/${encodeURIComponent(eventId)}${query.size ? `?${query}` : ''}`;
      const answer = await send('GET', path);
      return answer.status === 404 ? undefined : decode(eventDetail, 'GET', path, answer);
    },
    stats: (account) => call(stats, 'GET', account === undefined ? '/stats' : `/stats?${new URLSearchParams({ account })}`),
    async listQuarantined({ state, limit }) {
      const query = new URLSearchParams();
      if (state !== undefined) query.set('state', state);
      if (limit !== undefined) query.set('limit', String(limit));
      return (await call(quarantineList, 'GET', `/quarantine?${query}`)).deliveries;
    },
    async getQuarantined(id) {
      const path = `/quarantine/${encodeURIComponent(id)}?reveal=true`;
      const answer = await send('GET', path);
      if (answer.status === 404) return undefined;
      const { rawBodyBase64, ...rest } = decode(quarantinedDetail, 'GET', path, answer);
      return { ...rest, rawBody: new Uint8Array(Buffer.from(rawBodyBase64, 'base64')) };
    },
    releaseQuarantined: (id, { unordered }) => call(released, 'POST', `/quarantine/${encodeURIComponent(id)}/release`, { unordered }),
    async discardQuarantined(id) {
      await call(z.object({ discarded: z.string() }), 'POST', `/quarantine/${encodeURIComponent(id)}/discard`, {});
    },
    resolveStep: ({ eventId, step, handler }, resolution) =>
      call(resolved, 'POST', `/events/${encodeURIComponent(eventId)}/effects/resolve`, { step, handler, resolution }),
    story(resource, { limit, account }) {
      const query = new URLSearchParams({ resource, reveal: 'true' });
      if (limit !== undefined) query.set('limit', String(limit));
      if (account !== undefined) query.set('account', account);
      return call(story, 'GET', `/story?${query}`);
    },
    async find(id, account) {
      const path = `/find?${new URLSearchParams({ id, ...(account === undefined ? {} : { account }) })}`;
      const answer = await send('GET', path);
      if (answer.status === 404) return undefined;
      const result = decode(found, 'GET', path, answer);
      return result.kind === 'sender-id' ? { ...result, accounts: result.accounts ?? [result.account] } : result;
    },
    previewReplay: (which, sampleSize) => call(preview, 'POST', '/replay', { ...selection(which), dryRun: true, sample: sampleSize }),
    replayBatch: (which, page) => call(batch, 'POST', '/replay', { ...selection(which), ...page }),
  };
}
