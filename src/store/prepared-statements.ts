import { createHash } from 'node:crypto';
import { sql } from 'kysely';

/** The comment a prepared statement opens with: what the pool recognises it by. */
export const PREPARED_MARKER = '/* payhooks:prepared */';

/**
 * The opening of a statement that PostgreSQL should prepare once per connection: put it first in a statement that runs
 * for every batch with the same text (the receiver's store, the worker's claim and outcome), so that the server parses
 * it once per connection instead of once per call. Each call is still planned for its own values (payhooks'
 * connections set `plan_cache_mode = force_custom_plan`, database.ts). The statement's values must all be parameters:
 * the text is its identity. PGlite ignores it (a comment).
 *
 * @example
 * await sql`${PREPARED}select ${id}::text`.execute(store.db);
 */
export const PREPARED = sql.raw(`${PREPARED_MARKER}\n`);

/** Names given so far, by statement text: a text and its name never change, so each is hashed once. */
const names = new Map<string, string>();

/**
 * The name a marked statement is prepared under (its text's hash, so that another text can never reuse it), or
 * undefined for a statement without the {@link PREPARED} opening.
 */
export function preparedName(text: string): string | undefined {
  if (!text.startsWith(PREPARED_MARKER)) return undefined;
  let name = names.get(text);
  if (name === undefined) {
    name = `payhooks_${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
    names.set(text, name);
  }
  return name;
}

/**
 * Whether an error says that the server's prepared statements are not the connection's: what a pooler that hands
 * each transaction to another server connection (PgBouncer in transaction mode before 1.21) does to them. SQLSTATE
 * 26000 (the name is unknown on this server connection) and 42P05 (another client prepared it there already); the
 * statement did not run, so it can be sent again unprepared.
 */
export function isPreparedStatementMismatch(error: unknown): boolean {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return code === '26000' || code === '42P05';
}
