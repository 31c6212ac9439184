import { type Inbox, localInbox, reviveInboxResult } from '../console/inbox-ops.js';
import { PayhooksError } from '../errors.js';
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
  const call = async (op: keyof Inbox, args: unknown[]): Promise<unknown> => {
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
    return (JSON.parse(text, reviveInboxResult) as { result: unknown }).result;
  };
  const orUndefined = <T>(value: T | null) => (value === null ? undefined : value);
  return {
    listEvents: async (filter) => (await call('listEvents', [filter ?? {}])) as Awaited<ReturnType<Inbox['listEvents']>>,
    countEventsByStatus: async (filter) =>
      (await call('countEventsByStatus', [filter ?? {}])) as Awaited<ReturnType<Inbox['countEventsByStatus']>>,
    getEvent: async (eventId) => orUndefined((await call('getEvent', [eventId])) as Awaited<ReturnType<Inbox['getEvent']>> | null),
    countEventsByTypeAndStatus: async () =>
      (await call('countEventsByTypeAndStatus', [])) as Awaited<ReturnType<Inbox['countEventsByTypeAndStatus']>>,
    oldestPendingEvent: async () =>
      orUndefined((await call('oldestPendingEvent', [])) as Awaited<ReturnType<Inbox['oldestPendingEvent']>> | null),
    newestArrival: async () => (await call('newestArrival', [])) as Awaited<ReturnType<Inbox['newestArrival']>>,
    countReplayable: async (which) => (await call('countReplayable', [which])) as number,
    pageReplayable: async (which, page) => (await call('pageReplayable', [which, page])) as Awaited<ReturnType<Inbox['pageReplayable']>>,
    replayEvents: async (which) => (await call('replayEvents', [which])) as string[],
  };
}
