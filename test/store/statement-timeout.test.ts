// A statement the client timed out on must not run on, unseen, on the server: one slow every time would otherwise
// open connection after connection (each timeout discards one) until the server refuses new ones.
import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { waitFor } from '../helpers/wait.js';

describe.skipIf(!pgUrl)('a statement past the query timeout', () => {
  it('fails on the client and is stopped on the server a moment later', { timeout: 30_000 }, async () => {
    const store = await openDatabase({ url: pgUrl!, schema: uniqueSchema('stmt_timeout'), poolSize: 1, queryTimeoutMs: 1000 });
    const admin = new pg.Client({ connectionString: pgUrl! });
    await admin.connect();
    const marker = `payhooks_slow_${process.pid}_${Date.now()}`;
    const running = () =>
      admin.query(`select 1 from pg_stat_activity where query like $1 and state = 'active' and pid <> pg_backend_pid()`, [`%${marker}%`]);
    try {
      const failed = sql`select pg_sleep(20), ${sql.lit(marker)}::text`.execute(store.db).then(
        () => undefined,
        (error: unknown) => error,
      );
      // The server shows the statement's text while it runs (so the wait below can see it end).
      await waitFor(async () => (await running()).rowCount === 1, 'the statement to be running', 5000);
      const error = await failed;
      expect(error).toBeInstanceOf(Error);
      expect(String((error as Error).message)).toMatch(/timeout/i);
      // Gone a moment after the client gave up, well before its 20 s.
      await waitFor(async () => (await running()).rowCount === 0, 'the server to stop the statement', 5000);
    } finally {
      await admin.end();
      await store.close();
    }
  });
});
