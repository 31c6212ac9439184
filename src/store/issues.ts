import { sql } from 'kysely';
import type { PayhooksDatabase } from './database.js';
import type { EventRef } from './event-refs.js';
import { replayEvents } from './maintenance.js';
import type { EventStatus } from './schema.js';

/** The states of an issue (migrations/020): an operator moves them; a failure after `resolved` opens it again. */
export const ISSUE_STATES = ['open', 'acknowledged', 'resolved', 'ignored'] as const;
export type IssueState = (typeof ISSUE_STATES)[number];

/** What an operator does to an issue, and the states each may start from. */
export const ISSUE_ACTIONS = {
  acknowledge: { to: 'acknowledged', from: ['open', 'acknowledged'] },
  resolve: { to: 'resolved', from: ['open', 'acknowledged', 'ignored', 'resolved'] },
  ignore: { to: 'ignored', from: ['open', 'acknowledged', 'resolved', 'ignored'] },
} as const satisfies Record<string, { to: IssueState; from: readonly IssueState[] }>;
export type IssueAction = keyof typeof ISSUE_ACTIONS;

/** One issue: the failures of one (handler, error class, event type), with its affected events counted. */
export interface Issue {
  id: string;
  /** The handler's name as completion records it (a sink's carries its kind's prefix). */
  handler: string;
  errorClass: string;
  eventType: string;
  state: IssueState;
  firstSeenAt: Date;
  lastSeenAt: Date;
  /** Failed attempts counted (an event retried three times counts three). */
  failures: number;
  /** Distinct events with a failed attempt in it whose history is still kept. */
  affectedEvents: number;
  /** The accounts those events belong to (migrations/018). */
  affectedAccounts: number;
  /** Of those, the events not `done` now: what "replay affected" would re-queue (less those being processed). */
  unfinishedEvents: number;
  lastError: string | null;
  /** When it was last opened (first seen, or reopened). */
  openedAt: Date;
  /** How many times a failure reopened it after it was resolved. */
  reopened: number;
  /** When its state last changed. */
  stateAt: Date;
  /** When the notifier last told of its opening; null: not (yet) told. */
  notifiedAt: Date | null;
}

/** Which issues {@link listIssues} returns. */
export interface IssueFilter {
  /** Only issues in this state; default every state. */
  state?: IssueState | undefined;
  handler?: string | undefined;
  eventType?: string | undefined;
  /** Only issues with affected events of this account, counted in it alone (issues group across accounts). */
  account?: string | undefined;
  /** At most this many, newest failure first (default 100). */
  limit?: number | undefined;
}

/** An event an issue affects, as {@link issueEvents} lists it. */
export interface AffectedEvent {
  account: string;
  eventId: string;
  eventType: string;
  status: EventStatus;
  attempts: number;
  receivedAt: Date;
  lastError: string | null;
  /** Its position in the order of arrival: `after` of the next page. */
  position: string;
}

interface IssueRow {
  id: string;
  handler: string;
  error_class: string;
  event_type: string;
  state: IssueState;
  first_seen_at: Date;
  last_seen_at: Date;
  failures: string | number;
  affected_events: number;
  affected_accounts: number;
  unfinished_events: number;
  last_error: string | null;
  opened_at: Date;
  reopened: number;
  state_at: Date;
  notified_at: Date | null;
}

const issueOf = (row: IssueRow): Issue => ({
  id: String(row.id),
  handler: row.handler,
  errorClass: row.error_class,
  eventType: row.event_type,
  state: row.state,
  firstSeenAt: new Date(row.first_seen_at),
  lastSeenAt: new Date(row.last_seen_at),
  failures: Number(row.failures),
  affectedEvents: Number(row.affected_events),
  affectedAccounts: Number(row.affected_accounts),
  unfinishedEvents: Number(row.unfinished_events),
  lastError: row.last_error,
  openedAt: new Date(row.opened_at),
  reopened: row.reopened,
  stateAt: new Date(row.state_at),
  notifiedAt: row.notified_at === null ? null : new Date(row.notified_at),
});

/** The default and largest page of {@link listIssues}. */
export const ISSUE_PAGE = { default: 100, max: 1000 } as const;

/**
 * The state of the event of attempt row `a`, null once its history is dropped: a probe of the history's primary key
 * (event id, account, receipt time) as a subquery, so that it stays one probe per affected event. As a join, the
 * planner, which cannot tell how many events an issue has, hashed the whole history for each issue instead (100,000
 * events: 118 ms for three issues, and growing with the history).
 */
function statusOf(events: ReturnType<typeof sql.id>) {
  return sql`(select e.status from ${events} e
                where e.event_id = a.event_id and e.account = a.account and e.received_at = a.received_at)`;
}

/**
 * The issues' rows with their affected events counted: each issue's failed attempts through their partial index
 * (migrations/020), each event's state by its key (event id, account and receipt time: one partition). With
 * `account`, only that account's events count, and an issue with none there is left out unless `keepEmpty`.
 */
function issueRows(store: PayhooksDatabase, where: ReturnType<typeof sql<boolean>>, limit: number, account?: string, keepEmpty = false) {
  const onlyWithEvents = account !== undefined && !keepEmpty;
  const issues = sql.id(store.schema, 'issues');
  const attempts = sql.id(store.schema, 'handler_attempts');
  const events = sql.id(store.schema, 'inbox_events');
  const inAccount = account === undefined ? sql`` : sql`and a.account = ${account}`;
  return sql<IssueRow>`
    select i.*, coalesce(c.affected_events, 0) as affected_events, coalesce(c.affected_accounts, 0) as affected_accounts,
           coalesce(c.unfinished_events, 0) as unfinished_events
      from ${issues} i
      ${onlyWithEvents ? sql`join lateral` : sql`left join lateral`} (
        select count(a.status)::int as affected_events, count(distinct a.account) filter (where a.status is not null)::int as affected_accounts,
               count(*) filter (where a.status <> 'done')::int as unfinished_events
          from (select a.*, ${statusOf(events)} as status
                  from (select distinct a.event_id, a.account, a.received_at
                          from ${attempts} a where a.issue_id = i.id ${inAccount})  a offset 0) a
      ) c on ${onlyWithEvents ? sql`c.affected_events > 0` : sql`true`}
     where ${where}
     order by i.last_seen_at desc, i.id desc
     limit ${limit}`.execute(store.db);
}

/**
 * Issues, the most recently failing first.
 *
 * @example
 * await listIssues(store, { state: 'open' }) // [{ handler: 'ledger', errorClass: 'TypeError', failures: 500, … }]
 */
export async function listIssues(store: PayhooksDatabase, filter: IssueFilter = {}): Promise<Issue[]> {
  const conditions = [sql<boolean>`true`];
  if (filter.state !== undefined) conditions.push(sql<boolean>`i.state = ${filter.state}`);
  if (filter.handler !== undefined) conditions.push(sql<boolean>`i.handler = ${filter.handler}`);
  if (filter.eventType !== undefined) conditions.push(sql<boolean>`i.event_type = ${filter.eventType}`);
  const limit = Math.min(filter.limit ?? ISSUE_PAGE.default, ISSUE_PAGE.max);
  const { rows } = await issueRows(store, sql.join(conditions, sql` and `) as ReturnType<typeof sql<boolean>>, limit, filter.account);
  return rows.map(issueOf);
}

/**
 * One issue, or undefined when there is none with that id (ids are whole numbers; anything else is none). With
 * `account`, its affected events are counted in that account alone (0 when it has none there), as
 * {@link listIssues} counts them; its failures, last error and times stay the issue's, across accounts.
 *
 * @example
 * await getIssue(store, '7', { account: 'gym-north' }) // { affectedEvents: 3, affectedAccounts: 1, … }
 */
export async function getIssue(
  store: PayhooksDatabase,
  id: string,
  options: { account?: string | undefined } = {},
): Promise<Issue | undefined> {
  if (!/^\d{1,18}$/.test(id)) return undefined;
  const { rows } = await issueRows(store, sql<boolean>`i.id = ${id}::bigint`, 1, options.account, true);
  return rows[0] ? issueOf(rows[0]) : undefined;
}

/** Which of an issue's events {@link issueEvents} lists. */
export interface IssueEventsFilter {
  /** Only the events not `done` (what a replay would take). */
  unfinished?: boolean | undefined;
  /** Only this account's events. */
  account?: string | undefined;
  /** At most this many, oldest first (default 100). */
  limit?: number | undefined;
  /** After this position in the order of arrival (the last event's `position`: the next page). */
  after?: string | undefined;
}

/**
 * The events an issue affects (those with a failed attempt in it, while their history is kept), in order of arrival.
 *
 * @example
 * await issueEvents(store, '1', { unfinished: true, limit: 20 })
 */
export async function issueEvents(store: PayhooksDatabase, id: string, filter: IssueEventsFilter = {}): Promise<AffectedEvent[]> {
  if (!/^\d{1,18}$/.test(id)) return [];
  if (filter.after !== undefined && !/^\d{1,19}$/.test(filter.after)) throw new RangeError('after must be the position of an event');
  const attempts = sql.id(store.schema, 'handler_attempts');
  const events = sql.id(store.schema, 'inbox_events');
  const limit = Math.min(filter.limit ?? ISSUE_PAGE.default, 10_000);
  const inAccount = filter.account === undefined ? sql`` : sql`and a.account = ${filter.account}`;
  const { rows } = await sql<{
    account: string;
    event_id: string;
    event_type: string;
    status: EventStatus;
    attempts: number;
    received_at: Date;
    last_error: string | null;
    seq: string;
  }>`
    select e.account, e.event_id, e.event_type, e.status, e.attempts, e.received_at, e.last_error, e.seq
      from (select distinct a.event_id, a.account, a.received_at from ${attempts} a where a.issue_id = ${id}::bigint ${inAccount}) a
      -- One probe of the history's key per affected event (see statusOf), not a join the planner may hash it for.
      cross join lateral (select e.* from ${events} e
                           where e.event_id = a.event_id and e.account = a.account and e.received_at = a.received_at
                          offset 0) e
     where (${filter.unfinished === true} is false or e.status <> 'done')
       and e.seq > ${filter.after ?? '0'}::bigint
     order by e.seq
     limit ${limit}`.execute(store.db);
  return rows.map((row) => ({
    account: row.account,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    receivedAt: new Date(row.received_at),
    lastError: row.last_error,
    position: String(row.seq),
  }));
}

/** What {@link setIssueState} did. */
export type IssueStateChange =
  | { changed: true; issue: Issue }
  | { changed: false; reason: 'not-found' }
  | { changed: false; reason: 'not-allowed'; state: IssueState };

/**
 * Moves an issue by an operator's action: acknowledge (open → acknowledged), resolve (→ resolved: a failure after this
 * opens it again, and is told), ignore (→ ignored: its failures are still counted, it is never reopened nor told).
 *
 * @example
 * await setIssueState(store, '1', 'acknowledge') // { changed: true, issue: { state: 'acknowledged', … } }
 */
export async function setIssueState(store: PayhooksDatabase, id: string, action: IssueAction): Promise<IssueStateChange> {
  if (!/^\d{1,18}$/.test(id)) return { changed: false, reason: 'not-found' };
  const { to, from } = ISSUE_ACTIONS[action];
  const { rows } = await sql<{ id: string }>`
    update ${sql.id(store.schema, 'issues')}
       set state = ${to}, state_at = case when state = ${to} then state_at else now() end
     where id = ${id}::bigint and state = any(${[...from]}::text[])
    returning id`.execute(store.db);
  const issue = await getIssue(store, id);
  if (!issue) return { changed: false, reason: 'not-found' };
  if (rows.length === 0) return { changed: false, reason: 'not-allowed', state: issue.state };
  return { changed: true, issue };
}

/** What {@link replayIssue} re-queued, or would (a dry run). */
export interface IssueReplay {
  /** The affected events not done, found when it ran. */
  count: number;
  /** The events re-queued (none for a dry run; fewer than `count` when some were being processed). */
  eventIds: string[];
  /** The issue's state after it. */
  state: IssueState;
}

/** How many events one statement of {@link replayIssue} re-queues: a list of ids is a parameter each. */
const REPLAY_CHUNK = 1000;

/**
 * "Replay affected": once the cause is fixed, re-queues exactly the issue's affected events that are not `done`
 * (those being processed now are left alone) and marks the issue resolved first, so that a failure of the replay
 * reopens it. With `dryRun`, only counts them.
 *
 * @example
 * await replayIssue(store, '1') // { count: 500, eventIds: ['evt_…', …], state: 'resolved' }
 */
export async function replayIssue(
  store: PayhooksDatabase,
  id: string,
  options: { dryRun?: boolean | undefined; account?: string | undefined } = {},
): Promise<IssueReplay | undefined> {
  const issue = await getIssue(store, id);
  if (!issue) return undefined;
  const refs: EventRef[] = [];
  for (let after: string | undefined; ; ) {
    const page = await issueEvents(store, id, { unfinished: true, account: options.account, limit: 10_000, after });
    refs.push(...page.map(({ account, eventId }) => ({ account, eventId })));
    if (page.length < 10_000) break;
    after = page[page.length - 1]!.position;
  }
  if (options.dryRun) return { count: refs.length, eventIds: [], state: issue.state };
  const moved = await setIssueState(store, id, 'resolve');
  const eventIds: string[] = [];
  for (let at = 0; at < refs.length; at += REPLAY_CHUNK)
    eventIds.push(...(await replayEvents(store, { events: refs.slice(at, at + REPLAY_CHUNK) })));
  return { count: refs.length, eventIds, state: moved.changed ? moved.issue.state : issue.state };
}

/**
 * Claims the issues opened (new or reopened) and not told yet, marking them told: each opening is handed to one
 * caller, also with several services on one database (SKIP LOCKED).
 *
 * @example
 * for (const issue of await claimIssuesToNotify(store)) await notify(issue);
 */
export async function claimIssuesToNotify(store: PayhooksDatabase, limit = 20): Promise<Issue[]> {
  const issues = sql.id(store.schema, 'issues');
  const { rows } = await sql<{ id: string }>`
    update ${issues} i set notified_at = now()
     where i.id in (select n.id from ${issues} n where n.state = 'open' and n.notified_at is null
                     order by n.opened_at limit ${limit} for update skip locked)
    returning i.id`.execute(store.db);
  const claimed: Issue[] = [];
  for (const row of rows) {
    const issue = await getIssue(store, String(row.id));
    if (issue) claimed.push(issue);
  }
  return claimed;
}

/** How many issues are open now (new or reopened, not acknowledged): what the `open_issues` alarm observes. */
export async function countOpenIssues(store: PayhooksDatabase): Promise<number> {
  const { rows } = await sql<{ count: number }>`
    select count(*)::int as count from ${sql.id(store.schema, 'issues')} where state = 'open'`.execute(store.db);
  return rows[0]?.count ?? 0;
}

/**
 * Gives an issue's opening back to be told again (the notice could not be delivered): unless it was acknowledged,
 * resolved or ignored meanwhile, the next {@link claimIssuesToNotify} hands it out again.
 */
export async function releaseIssueNotice(store: PayhooksDatabase, id: string): Promise<void> {
  await sql`update ${sql.id(store.schema, 'issues')} set notified_at = null where id = ${id}::bigint and state = 'open'`.execute(store.db);
}
