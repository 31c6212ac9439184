import { type Kysely, sql } from 'kysely';
import { PayhooksError } from '../../errors.js';
import { assertSchemaName } from '../../store/database.js';
import { isAccountId } from '../../store/accounts.js';

/** The mirror's tables that reference its `accounts` table: a row in any of them keeps its account. */
export const MIRROR_ACCOUNT_TABLES = [
  'customers',
  'invoices',
  'invoice_items',
  'payments',
  'payment_methods',
  'subscriptions',
  'refunds',
  'disputes',
  'backfill_cursors',
  'verify_cursors',
  'verify_findings',
  'verify_seen',
] as const;

/** What {@link ensureMirrorAccounts} changed. */
export interface MirrorAccountsReport {
  /** Ids newly inserted. */
  added: string[];
  /** Unconfigured ids removed (they held no rows). */
  removed: string[];
  /** Unconfigured ids kept because rows still belong to them (their rows stay readable, no new ones can be written). */
  kept: string[];
}

/**
 * Keeps the mirror's `accounts` table (in the mirror's own schema, migrations/mirror/003) in step with the
 * configuration: inserts the configured ids, and removes unconfigured ones that hold no rows. The mirror's tables
 * reference it, so that the database refuses a row for an account that is not configured. Call it at start, after
 * `migrateMirror`; safe to run from several processes at once.
 *
 * @example
 * await ensureMirrorAccounts(store.db, 'payhooks_mirror', config.accounts.map((a) => a.id));
 */
export async function ensureMirrorAccounts<DB>(db: Kysely<DB>, schema: string, ids: readonly string[]): Promise<MirrorAccountsReport> {
  assertSchemaName(schema);
  const wanted = [...new Set(ids)];
  const bad = wanted.filter((id) => !isAccountId(id));
  if (bad.length > 0) {
    throw new PayhooksError(
      `Account ids ${bad.map((id) => JSON.stringify(id)).join(', ')} are not valid: an account id is 1 to 63 lower-case letters, ` +
        'digits, "_" or "-", starting with a letter or digit.',
    );
  }
  if (wanted.length === 0) throw new PayhooksError('ensureMirrorAccounts needs at least one configured account id.');
  const raw = db.withoutPlugins();
  const accounts = sql.id(schema, 'accounts');
  return raw.transaction().execute(async (trx) => {
    const inserted = await sql<{ id: string }>`
      insert into ${accounts} (id) select unnest(${wanted}::text[]) on conflict do nothing returning id`.execute(trx);
    const holding = sql.join(
      MIRROR_ACCOUNT_TABLES.map((table) => sql`exists (select 1 from ${sql.id(schema, table)} r where r.account = a.id)`),
      sql` or `,
    );
    // The row check and the delete in one statement; a row written for the account meanwhile fails the delete on the
    // foreign key rather than being orphaned, which the transaction turns into an error to retry at the next start.
    const removed = await sql<{ id: string }>`
      delete from ${accounts} a where a.id <> all(${wanted}::text[]) and not (${holding}) returning a.id`.execute(trx);
    const kept = await sql<{ id: string }>`
      select id from ${accounts} where id <> all(${wanted}::text[]) order by id`.execute(trx);
    return {
      added: inserted.rows.map((row) => row.id).sort(),
      removed: removed.rows.map((row) => row.id).sort(),
      kept: kept.rows.map((row) => row.id),
    };
  });
}

/**
 * Fails with a clear message when `account` is not in the mirror's `accounts` table, before a run writes anything:
 * the database would refuse its first row anyway, with a foreign-key error that names no configuration.
 */
export async function assertMirrorAccount<DB>(db: Kysely<DB>, schema: string, account: string): Promise<void> {
  const { rows } = await sql<{ id: string }>`select id from ${sql.id(schema, 'accounts')} where id = ${account}`.execute(
    db.withoutPlugins(),
  );
  if (rows.length > 0) return;
  throw new PayhooksError(
    `The account ${JSON.stringify(account)} is not among the mirror's accounts (${schema}.accounts): configure it under accounts ` +
      '(serve adds the configured ones at start), or name a configured account.',
  );
}
