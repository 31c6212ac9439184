import {
  type Inbox,
  localInbox,
  REMOTE_OP_NAMES,
  type RemoteOpName,
  type RemotePageRequest,
  reviveInboxResult,
} from '../console/inbox-ops.js';
import { PayhooksError } from '../errors.js';
import { type EventPage, MAX_EVENT_PAGE } from '../store/console-queries.js';
import type { StoredEvent } from '../store/inbox.js';
import { DataDirInUseError } from '../store/data-dir-lock.js';
import { readServeSession, type ServeSession } from './serve-session.js';
import { type DatabaseEnv, withDatabase } from './with-database.js';

/**
 * Runs `work` on the inbox the environment names: on the database itself, or, when a running `payhooks serve`
 * holds the embedded database, through that serve (its session file says where and with which token). The same
 * operations run either way, so commands print the same.
 *
 * @example
 * const rows = await withInbox(ctx.env('events'), (inbox) => inbox.listEvents({ status: 'dead' }));
 */
export async function withInbox<T>(env: DatabaseEnv, work: (inbox: Inbox) => Promise<T>): Promise<T> {
  try {
    return await withDatabase(env, (store) => work(localInbox(store)));
  } catch (err) {
    if (!(err instanceof DataDirInUseError)) throw err;
    const session = readServeSession(err.dataDir);
    if (!session || (err.holderPid !== undefined && session.pid !== err.holderPid)) throw err;
    return work(remoteInbox(session, err));
  }
}

/** The inbox operations, asked of a running serve over its console API with the local token. */
function remoteInbox(session: ServeSession, inUse: DataDirInUseError): Inbox {
  const call = async (op: RemoteOpName, args: unknown[]): Promise<unknown> => {
    let response: Response;
    try {
      response = await fetch(`${session.url}/admin/api/inbox`, {
        method: 'POST',
        headers: { authorization: `Bearer ${session.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ op, args }),
        signal: AbortSignal.timeout(60_000),
      });
    } catch (cause) {
      throw new PayhooksError(`${inUse.message} It does not answer at ${session.url} either.`, { cause });
    }
    const text = await response.text();
    if (!response.ok)
      throw new PayhooksError(`payhooks serve (process ${session.pid}) at ${session.url} answered ${response.status}: ${text}`);
    return (JSON.parse(text, reviveInboxResult) as { result?: unknown }).result;
  };
  // Each operation takes and returns JSON (dates revived): the same calls as the local inbox, by name.
  const byName = Object.fromEntries(REMOTE_OP_NAMES.map((op) => [op, (...args: unknown[]) => call(op, args)]));
  // serve answers a page of events at a time: pages from newest to oldest make the list the local call returns.
  const listEvents: Inbox['listEvents'] = async ({ status, eventType, limit = DEFAULT_LIST_LIMIT } = {}) => {
    const events: StoredEvent[] = [];
    let cursor: string | undefined;
    while (events.length < limit) {
      const request: RemotePageRequest = { status, eventType, cursor, limit: Math.min(limit - events.length, MAX_EVENT_PAGE) };
      const page = (await call('pageEvents', [request])) as EventPage;
      events.push(...page.events);
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    return events;
  };
  return { ...byName, listEvents } as unknown as Inbox;
}

/** listEvents' own default (store/inbox.ts), for a call without a limit. */
const DEFAULT_LIST_LIMIT = 100;
