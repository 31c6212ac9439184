// A client of the console's issue routes (issue-routes.ts), for `payhooks issues` beside a running serve: each answer
// checked against the route's shape (dates revived), so that the command prints the same as from the database.
import { z } from 'zod';
import { PayhooksError } from '../errors.js';
import type { AffectedEvent, Issue, IssueAction, IssueEventsFilter, IssueFilter, IssueReplay } from '../store/issues.js';
import { ISSUE_STATES } from '../store/issues.js';
import { EVENT_STATUSES } from '../store/schema.js';
import { AdminApiError, type AdminClientOptions } from './admin-client.js';

const date = z.iso.datetime({ offset: true }).transform((text) => new Date(text));
// In the order of store/issues.ts's objects, so that JSON printed from an answer is the same.
const issue = z.object({
  id: z.string(),
  handler: z.string(),
  errorClass: z.string(),
  eventType: z.string(),
  state: z.enum(ISSUE_STATES),
  firstSeenAt: date,
  lastSeenAt: date,
  failures: z.number(),
  affectedEvents: z.number(),
  affectedAccounts: z.number(),
  unfinishedEvents: z.number(),
  lastError: z.string().nullable(),
  openedAt: date,
  reopened: z.number(),
  stateAt: date,
  notifiedAt: date.nullable(),
});
const affected = z.object({
  account: z.string(),
  eventId: z.string(),
  eventType: z.string(),
  status: z.enum(EVENT_STATUSES),
  attempts: z.number(),
  receivedAt: date,
  lastError: z.string().nullable(),
  position: z.string(),
});
const replayed = z.object({ count: z.number(), eventIds: z.array(z.string()), state: z.enum(ISSUE_STATES) });

/** The issue routes of the console's API, one method a route (docs/admin.md#issues); personal data as stored. */
export interface IssuesClient {
  list(filter: IssueFilter): Promise<Issue[]>;
  /** undefined when there is no such issue (404). */
  show(id: string, filter: IssueEventsFilter): Promise<{ issue: Issue; events: AffectedEvent[] } | undefined>;
  /** The issue after the action; `status` 404 (none) or 409 (not from its state) as an AdminApiError. */
  act(id: string, action: IssueAction): Promise<Issue>;
  /** undefined when there is no such issue (404). */
  replay(id: string, options: { dryRun?: boolean | undefined; account?: string | undefined }): Promise<IssueReplay | undefined>;
}

/**
 * A client of the console's issue routes at `url`, with a bearer token (the console's, or serve's session token).
 *
 * @example
 * const issues = createIssuesClient({ url: 'http://127.0.0.1:8787', token });
 * await issues.act('1', 'acknowledge');
 */
export function createIssuesClient(options: AdminClientOptions): IssuesClient {
  const base = options.url.replace(/\/+$/, '');
  const timeoutMs = options.timeoutMs ?? 60_000;
  async function call<T>(schema: z.ZodType<T>, method: 'GET' | 'POST', path: string, body?: unknown): Promise<T | undefined> {
    let status: number;
    let text: string;
    try {
      const response = await fetch(`${base}/admin/api${path}`, {
        method,
        headers: { authorization: `Bearer ${options.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = response.status;
      text = await response.text();
    } catch (cause) {
      throw new AdminApiError(`The console API at ${base} does not answer: ${PayhooksError.describe(cause)}`, undefined, { cause });
    }
    const route = `${method} /admin/api${path.split('?', 1)[0]}`;
    if (status === 404 && method === 'GET') return undefined;
    if (status < 200 || status > 299) throw new AdminApiError(`${route} answered ${status}: ${text}`, status);
    const parsed = schema.safeParse(JSON.parse(text));
    if (!parsed.success)
      throw new AdminApiError(`${route} answered in a shape this payhooks does not read: ${parsed.error.message}`, status);
    return parsed.data;
  }
  const at = (id: string) => `/issues/${encodeURIComponent(id)}`;
  return {
    async list({ state, handler, eventType, account, limit }) {
      const query = new URLSearchParams({ reveal: 'true' });
      for (const [name, value] of Object.entries({ state, handler, type: eventType, account, limit }))
        if (value !== undefined) query.set(name, String(value));
      return (await call(z.object({ issues: z.array(issue) }), 'GET', `/issues?${query}`))!.issues;
    },
    async show(id, { unfinished, account, limit, after }) {
      const query = new URLSearchParams({ reveal: 'true' });
      for (const [name, value] of Object.entries({ unfinished, account, limit, after }))
        if (value !== undefined) query.set(name, String(value));
      return call(z.object({ issue, events: z.array(affected) }), 'GET', `${at(id)}?${query}`);
    },
    async act(id, action) {
      return (await call(z.object({ issue }), 'POST', `${at(id)}/${action}`, {}))!.issue;
    },
    async replay(id, { dryRun, account }) {
      try {
        return await call(replayed, 'POST', `${at(id)}/replay`, { dryRun, account });
      } catch (err) {
        if (err instanceof AdminApiError && err.status === 404) return undefined;
        throw err;
      }
    },
  };
}
