import { AdminApiError } from '../console/admin-client.js';
import { createIssuesClient } from '../console/issues-client.js';
import { PayhooksError } from '../errors.js';
import type { PayhooksDatabase } from '../store/database.js';
import {
  type AffectedEvent,
  getIssue,
  type Issue,
  type IssueAction,
  type IssueEventsFilter,
  type IssueFilter,
  type IssueReplay,
  type IssueStateChange,
  issueEvents,
  listIssues,
  replayIssue,
  setIssueState,
} from '../store/issues.js';
import type { DatabaseEnv } from './with-database.js';
import { withDatabaseOrServe } from './with-inbox.js';

/**
 * What `payhooks issues` asks: the store's issue operations on a database this process opened, or the console's issue
 * routes of a `serve` that holds the embedded database. The same answers either way, so the command prints the same.
 */
export interface IssueDesk {
  list(filter: IssueFilter): Promise<Issue[]>;
  /** The issue with its affected events; undefined when there is none. */
  show(id: string, filter: IssueEventsFilter): Promise<{ issue: Issue; events: AffectedEvent[] } | undefined>;
  act(id: string, action: IssueAction): Promise<IssueStateChange>;
  /** undefined when there is no such issue. */
  replay(id: string, options: { dryRun?: boolean | undefined; account?: string | undefined }): Promise<IssueReplay | undefined>;
}

/** The issues of a database this process opened. */
function localDesk(store: PayhooksDatabase): IssueDesk {
  return {
    list: (filter) => listIssues(store, filter),
    async show(id, filter) {
      const issue = await getIssue(store, id, { account: filter.account });
      return issue ? { issue, events: await issueEvents(store, id, filter) } : undefined;
    },
    act: (id, action) => setIssueState(store, id, action),
    replay: (id, options) => replayIssue(store, id, options),
  };
}

/**
 * Runs `work` on the issues the environment names (see withInbox: the database, or a running serve's console API).
 *
 * @example
 * const open = await withIssueDesk(ctx.env('events'), (desk) => desk.list({ state: 'open' }));
 */
export function withIssueDesk<T>(env: DatabaseEnv, work: (desk: IssueDesk) => Promise<T>): Promise<T> {
  return withDatabaseOrServe(
    env,
    (store) => work(localDesk(store)),
    async (session, inUse) => {
      const client = createIssuesClient({ url: session.url, token: session.token });
      const asked = async <R>(call: () => Promise<R>): Promise<R> => {
        try {
          return await call();
        } catch (err) {
          if (!(err instanceof AdminApiError)) throw err;
          if (err.status === undefined)
            throw new PayhooksError(`${inUse.message} It does not answer at ${session.url} either.`, { cause: err });
          throw new PayhooksError(`payhooks serve (process ${session.pid}) at ${session.url}: ${PayhooksError.describe(err)}`, {
            cause: err,
          });
        }
      };
      return work({
        list: (filter) => asked(() => client.list(filter)),
        show: (id, filter) => asked(() => client.show(id, filter)),
        async act(id, action) {
          try {
            return { changed: true, issue: await client.act(id, action) };
          } catch (err) {
            if (err instanceof AdminApiError && err.status === 404) return { changed: false, reason: 'not-found' };
            if (err instanceof AdminApiError && err.status === 409) {
              const now = await asked(() => client.show(id, { limit: 1 }));
              if (now) return { changed: false, reason: 'not-allowed', state: now.issue.state };
            }
            return asked(() => Promise.reject(err));
          }
        },
        replay: (id, options) => asked(() => client.replay(id, options)),
      });
    },
  );
}
