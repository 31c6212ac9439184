import { AdminApiError, type AdminClient, createAdminClient } from '../console/admin-client.js';
import { PayhooksError } from '../errors.js';
import { MAX_EVENT_PAGE } from '../store/console-queries.js';
import { DataDirInUseError } from '../store/data-dir-lock.js';
import type { PayhooksDatabase } from '../store/database.js';
import type { StatusCounts, StoredEvent } from '../store/inbox.js';
import { type Inbox, localInbox } from './inbox.js';
import { readServeSession, type ServeSession } from '../service/serve-session.js';
import { type DatabaseEnv, withDatabase } from './with-database.js';

/**
 * Runs `work` on the inbox the environment names: on the database itself, or, when a running `payhooks serve`
 * holds the embedded database, through that serve's console API (its session file says where, and gives the
 * session token). The same answers either way, so commands print the same.
 *
 * @example
 * const rows = await withInbox(ctx.env('events'), (inbox) => inbox.listEvents({ status: 'dead' }));
 */
export async function withInbox<T>(env: DatabaseEnv, work: (inbox: Inbox) => Promise<T>): Promise<T> {
  return withDatabaseOrServe(
    env,
    (store) => work(localInbox(store)),
    (session, inUse) => work(serveInbox(session, inUse)),
  );
}

/**
 * Runs `local` on the database the environment names or, when a running `payhooks serve` holds the embedded database,
 * `beside` with that serve's session (its URL and session token): what {@link withInbox} does, for commands that
 * speak to the console's API through clients of their own (`payhooks issues`).
 */
export async function withDatabaseOrServe<T>(
  env: DatabaseEnv,
  local: (store: PayhooksDatabase) => Promise<T>,
  beside: (session: ServeSession, inUse: DataDirInUseError) => Promise<T>,
): Promise<T> {
  try {
    return await withDatabase(env, local);
  } catch (err) {
    if (!(err instanceof DataDirInUseError)) throw err;
    const session = readServeSession(err.dataDir);
    if (!session || (err.holderPid !== undefined && session.pid !== err.holderPid)) throw err;
    return beside(session, err);
  }
}

/** listEvents' own default (store/inbox.ts), for a call without a limit. */
const DEFAULT_LIST_LIMIT = 100;

/** The inbox through a running serve's console API, with the session token; personal data as stored (revealed). */
function serveInbox(session: ServeSession, inUse: DataDirInUseError): Inbox {
  const admin = createAdminClient({ url: session.url, token: session.token });
  // Said as the command line has always said it: which serve, and that it did not answer or what it answered.
  const asked = async <T>(work: (api: AdminClient) => Promise<T>): Promise<T> => {
    try {
      return await work(admin);
    } catch (err) {
      if (!(err instanceof AdminApiError)) throw err;
      if (err.status === undefined)
        throw new PayhooksError(`${inUse.message} It does not answer at ${session.url} either.`, { cause: err });
      throw new PayhooksError(`payhooks serve (process ${session.pid}) at ${session.url}: ${PayhooksError.describe(err)}`, { cause: err });
    }
  };
  const stats = (account?: string) => asked((api) => api.stats(account));
  return {
    // serve answers a page of events at a time: pages from newest to oldest make the list the local call returns.
    listEvents: ({ account, status, eventType, limit = DEFAULT_LIST_LIMIT }) =>
      asked(async (api) => {
        const events: StoredEvent[] = [];
        let cursor: string | undefined;
        while (events.length < limit) {
          const pageSize = Math.min(limit - events.length, MAX_EVENT_PAGE);
          const page = await api.listEvents({ account, status, type: eventType, cursor, limit: pageSize, reveal: true });
          events.push(...page.events);
          if (page.nextCursor === null) break;
          cursor = page.nextCursor;
        }
        return events;
      }),
    // The counts per type and state hold those of any filter by type and state.
    async countEventsByStatus({ account, status, eventType }) {
      const counts: StatusCounts = {};
      for (const row of (await stats(account)).byTypeAndStatus) {
        if ((status === undefined || row.status === status) && (eventType === undefined || row.eventType === eventType))
          counts[row.status] = (counts[row.status] ?? 0) + row.count;
      }
      return counts;
    },
    getEvent: (eventId, account) => asked((api) => api.getEvent(eventId, { reveal: true, account })),
    countEventsByTypeAndStatus: async (account) => (await stats(account)).byTypeAndStatus,
    oldestPendingEvent: async () => (await stats()).oldestPending ?? undefined,
    previewReplay: (which, sampleSize) => asked((api) => api.previewReplay(which, sampleSize)),
    listQuarantined: (filter) => asked((api) => api.listQuarantined(filter)),
    getQuarantined: (id) => asked((api) => api.getQuarantined(id)),
    releaseQuarantined: (id, options) => asked((api) => api.releaseQuarantined(id, options)),
    discardQuarantined: (id) => asked((api) => api.discardQuarantined(id)),
    resolveStep: (ref, resolution) => asked((api) => api.resolveStep(ref, resolution)),
    replayBatch: (which, batch) => asked((api) => api.replayBatch(which, batch)),
    resourceStory: (resource, { limit, account }) => asked((api) => api.story(resource, { limit, account })),
    findById: (id, account) => asked((api) => api.find(id, account)),
  };
}
