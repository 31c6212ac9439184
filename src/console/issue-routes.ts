// The issues of the console's API (docs/admin.md#issues): failures grouped by (handler or sink, error class, event
// type), their states, and "replay affected". A file of its own beside admin-api.ts, which lists these routes with
// its others; the few helpers every route shares (the JSON answer, the 4xx, the body) come from admin-api.ts as an
// argument rather than an import, so that the two modules do not import each other.
import type { Logger } from 'pino';
import { z } from 'zod';
import type { HttpResponse } from '../adapters/http-handler.js';
import {
  type AffectedEvent,
  getIssue,
  type Issue,
  ISSUE_ACTIONS,
  ISSUE_PAGE,
  ISSUE_STATES,
  type IssueAction,
  issueEvents,
  listIssues,
  replayIssue,
  setIssueState,
} from '../store/issues.js';
import type { PayhooksDatabase } from '../store/database.js';
import type { AdminApiOptions, AdminRequest } from './admin-api.js';
import { accountId, arrivalPosition, filterText } from './inputs.js';
import { maskPersonalData } from './mask.js';

/** What a route's answer is made from (admin-api.ts's RouteCall). */
export interface IssueRouteCall {
  request: AdminRequest;
  options: AdminApiOptions;
  store: PayhooksDatabase;
  query: Record<string, string>;
  param: string | undefined;
  via: string;
}

/** A route as admin-api.ts lists them. */
export interface IssueRoute {
  method: 'GET' | 'POST';
  pattern: RegExp;
  commandLine: boolean;
  answer(call: IssueRouteCall, logger: Logger | undefined): Promise<HttpResponse>;
}

/** The helpers of admin-api.ts the routes answer with. */
export interface RouteKit {
  ok(value: unknown, status?: number): HttpResponse;
  /** A 4xx with its message. */
  refuse(status: number, message: string): Error;
  parse<T>(schema: z.ZodType<T>, value: unknown, what: string): T;
  /** The request's body as JSON ({} when empty). */
  body(request: AdminRequest): Promise<unknown>;
}

/** How the operator (or the service) names where a handler's failures come from: a handler, or a sink of a kind. */
export type HandlerSource = { kind: 'handler'; name: string } | { kind: 'sink'; prefix: string; name: string };

const listQuery = z.strictObject({
  state: z.enum(ISSUE_STATES).optional(),
  handler: filterText.optional(),
  type: filterText.optional(),
  account: accountId.optional(),
  limit: z.coerce.number().int().min(1).max(ISSUE_PAGE.max).optional(),
  reveal: z.enum(['true', 'false']).optional(),
});
const showQuery = z.strictObject({
  unfinished: z.enum(['true', 'false']).optional(),
  account: accountId.optional(),
  limit: z.coerce.number().int().min(1).max(ISSUE_PAGE.max).optional(),
  after: arrivalPosition.optional(),
  reveal: z.enum(['true', 'false']).optional(),
});
const replayBody = z.strictObject({ dryRun: z.boolean().optional(), account: accountId.optional() });

const ID = '(\\d{1,18})';

/** The issue as the API answers it: its last error masked (errors quote what a handler saw), its source named. */
function shown(issue: Issue, options: AdminApiOptions, reveal = false) {
  return {
    ...issue,
    source: options.handlerSource?.(issue.handler) ?? { kind: 'handler', name: issue.handler },
    lastError: issue.lastError === null || reveal ? issue.lastError : maskPersonalData(issue.lastError),
  };
}

const maskedEvent = (event: AffectedEvent) => ({
  ...event,
  lastError: event.lastError === null ? null : maskPersonalData(event.lastError),
});

/**
 * `GET /admin/api/issues`, `GET /admin/api/issues/:id` (with its affected events), `POST …/:id/acknowledge|resolve|ignore`
 * and `POST …/:id/replay` (`{"dryRun":true}` counts only). The command line's session token opens them all, as it
 * opens `replay`: `payhooks issues` works beside a running serve.
 */
export function issueRoutes(kit: RouteKit): IssueRoute[] {
  const found = async (store: PayhooksDatabase, id: string, account?: string) => {
    const issue = await getIssue(store, id, { account });
    if (!issue) throw kit.refuse(404, `No issue #${id}.`);
    return issue;
  };
  const action = (name: IssueAction): IssueRoute => ({
    method: 'POST',
    pattern: new RegExp(`^/admin/api/issues/${ID}/${name}$`),
    commandLine: true,
    async answer({ store, param, options, via }, logger) {
      const change = await setIssueState(store, param!, name);
      if (!change.changed && change.reason === 'not-found') throw kit.refuse(404, `No issue #${param}.`);
      if (!change.changed)
        throw kit.refuse(
          409,
          `Issue #${param} is ${change.state}: ${name} applies to an issue that is ${ISSUE_ACTIONS[name].from.join(', ')}.`,
        );
      logger?.info({ issueId: param, state: change.issue.state, via }, `console: issue ${name}d`);
      return kit.ok({ issue: shown(change.issue, options) });
    },
  });
  return [
    {
      method: 'GET',
      pattern: /^\/admin\/api\/issues$/,
      commandLine: true,
      async answer({ store, query, options, via }, logger) {
        const filter = kit.parse(listQuery, query, 'query');
        const issues = await listIssues(store, {
          state: filter.state,
          handler: filter.handler,
          eventType: filter.type,
          account: filter.account,
          limit: filter.limit,
        });
        const reveal = filter.reveal === 'true';
        if (reveal && issues.length > 0) logger?.info({ count: issues.length, via }, 'console: personal data of issues revealed');
        return kit.ok({ issues: issues.map((issue) => shown(issue, options, reveal)), masked: !reveal });
      },
    },
    {
      method: 'GET',
      pattern: new RegExp(`^/admin/api/issues/${ID}$`),
      commandLine: true,
      async answer({ store, query, param, options, via }, logger) {
        const filter = kit.parse(showQuery, query, 'query');
        // With an account, the issue's counts are that account's, as its events are.
        const issue = await found(store, param!, filter.account);
        const events = await issueEvents(store, param!, {
          unfinished: filter.unfinished === 'true',
          account: filter.account,
          limit: filter.limit,
          after: filter.after,
        });
        const reveal = filter.reveal === 'true';
        if (reveal) logger?.info({ issueId: param, via }, 'console: personal data of an issue revealed');
        return kit.ok({
          issue: shown(issue, options, reveal),
          events: reveal ? events : events.map(maskedEvent),
          masked: !reveal,
        });
      },
    },
    action('acknowledge'),
    action('resolve'),
    action('ignore'),
    {
      method: 'POST',
      pattern: new RegExp(`^/admin/api/issues/${ID}/replay$`),
      commandLine: true,
      async answer({ request, store, param, via }, logger) {
        const { dryRun, account } = kit.parse(replayBody, await kit.body(request), 'body');
        const replay = await replayIssue(store, param!, { dryRun, account });
        if (!replay) throw kit.refuse(404, `No issue #${param}.`);
        if (!dryRun) logger?.info({ issueId: param, count: replay.eventIds.length, via }, 'console: affected events of an issue replayed');
        return kit.ok({ count: replay.count, replayed: replay.eventIds.length, eventIds: replay.eventIds, state: replay.state });
      },
    },
  ];
}
