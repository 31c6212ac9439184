import { sql } from 'kysely';
import { PayhooksError } from '../errors.js';
import type { PayhooksDatabase } from './database.js';

/**
 * The implicit account of a single-account installation: what every event belongs to when no `accounts` are
 * configured, and what migration 018 gave the events stored before it.
 */
export const DEFAULT_ACCOUNT = 'default';

const ACCOUNT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** True for an account id payhooks accepts: lower-case letters, digits, `-` and `_`, at most 63; it appears in URLs. */
export function isAccountId(id: string): boolean {
  return ACCOUNT_ID.test(id);
}

/** What {@link ensureAccounts} keeps in the database for one configured account. */
export interface AccountRecord {
  id: string;
  /** Its weight in the fair claim (1 to 1000); default 1. */
  workerShare?: number | undefined;
}

/** What {@link ensureAccounts} did. */
export interface AccountsSync {
  added: string[];
  /** Accounts no longer configured that held no rows: removed, so the database refuses their events from now on. */
  removed: string[];
  /**
   * Accounts no longer configured that still hold stored events: kept (their history refers to them) until pruned.
   * The receiver refuses their deliveries (no route); the database would still accept a row written by hand.
   */
  retained: string[];
}

/** An account id that payhooks cannot use (in a URL, in the database's check). */
export class AccountIdError extends PayhooksError {
  constructor(id: string) {
    super(
      `Invalid account id ${JSON.stringify(id)}: use lower-case letters, digits, "-" and "_", starting with a letter or digit (at most 63 characters).`,
    );
  }
}

/**
 * Keeps the accounts table in step with the configuration, in one transaction: adds the configured accounts that are
 * missing, sets each one's worker share, and removes the accounts no longer configured that hold no stored events
 * (the foreign keys of migration 018 keep those that do: see {@link AccountsSync.retained}).
 *
 * @example
 * await ensureAccounts(store, [{ id: 'gym-north' }, { id: 'gym-south', workerShare: 2 }]);
 */
export async function ensureAccounts(store: PayhooksDatabase, accounts: readonly AccountRecord[]): Promise<AccountsSync> {
  for (const account of accounts) if (!isAccountId(account.id)) throw new AccountIdError(account.id);
  const ids = accounts.map((a) => a.id);
  const shares = accounts.map((a) => a.workerShare ?? 1);
  const table = sql.id(store.schema, 'accounts');
  const sync = await store.db.transaction().execute(async (trx) => {
    const { rows: added } = await sql<{ id: string; inserted: boolean }>`
      insert into ${table} as t (id, worker_share)
      select * from unnest(${ids}::text[], ${shares}::int[])
      on conflict (id) do update set worker_share = excluded.worker_share where t.worker_share <> excluded.worker_share
      returning id, (xmax = 0) as inserted`.execute(trx);
    const { rows: stale } = await sql<{ id: string }>`select id from ${table} where id <> all(${ids}::text[]) order by id`.execute(trx);
    const removed: string[] = [];
    const retained: string[] = [];
    for (const { id } of stale) {
      // A savepoint per account: the foreign keys refuse the delete of one that holds rows, without undoing the rest.
      await sql`savepoint drop_account`.execute(trx);
      const gone = await sql`delete from ${table} where id = ${id}`.execute(trx).then(
        () => true,
        (error: unknown) => {
          if ((error as { code?: unknown }).code === '23503') return false;
          throw error;
        },
      );
      await sql.raw(gone ? 'release savepoint drop_account' : 'rollback to savepoint drop_account').execute(trx);
      (gone ? removed : retained).push(id);
    }
    return { added: added.filter((row) => row.inserted).map((row) => row.id), removed, retained };
  });
  accountsRead.delete(store);
  return sync;
}

/** How long a claim goes by the accounts it last read (see {@link onlyAccount}). */
export const ACCOUNTS_REREAD_MS = 1000;

/** What {@link onlyAccount} last read, per store. */
const accountsRead = new WeakMap<PayhooksDatabase, { only: string | null; at: number }>();

/**
 * The store's one account, when it has exactly one (a single-account installation's implicit `default`), else null:
 * read again once {@link ACCOUNTS_REREAD_MS} have passed, so that an account another process adds is claimed for
 * within about a second. With it, the claim calls `claim_events_single` itself instead of `claim_events`, whose
 * PL/pgSQL choice between the two cost a claim of 500 about 5 ms more than the call alone (a loop of claims rolled
 * back over a queue of 30,000, medians of 8 blocks: 15.8 to 20.1 ms against 24.8 to 25.4): the rows pass through one
 * more function's result and its RETURN QUERY. With several accounts, `claim_events` chooses as before.
 * {@link ensureAccounts} forgets what was read, so this process's own change counts at once.
 */
export async function onlyAccount(store: PayhooksDatabase): Promise<string | null> {
  const read = accountsRead.get(store);
  const now = Date.now();
  if (read && now - read.at < ACCOUNTS_REREAD_MS) return read.only;
  const { rows } = await sql<{ id: string }>`select id from ${sql.id(store.schema, 'accounts')} limit 2`.execute(store.db);
  const only = rows.length === 1 ? rows[0]!.id : null;
  accountsRead.set(store, { only, at: now });
  return only;
}

/**
 * One string for an event's whole key, (account, eventId), for maps and sets in memory: an eventId alone may be
 * another account's event too.
 *
 * @example
 * new Set([eventKey('default', 'evt_1'), eventKey('gym-north', 'evt_1')]).size // 2
 */
export function eventKey(account: string, eventId: string): string {
  // An account id holds no newline (isAccountId), so the pair reads back one way only.
  return `${account}\n${eventId}`;
}
