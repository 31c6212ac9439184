// A connection the server ends (pg_terminate_backend, a failover): the statement on it fails, and the pool must not
// hand that connection out again. The error arrives a moment before the socket closes, so a connection given back
// in between was taken by the next statement, which failed too ("Connection terminated unexpectedly").
import { sql } from 'kysely';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { waitFor } from '../helpers/wait.js';

const backendPid = async (db: Awaited<ReturnType<typeof openDatabase>>['db']) =>
  (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(db)).rows[0]!.pid;

describe.skipIf(!pgUrl)('a connection the server terminates', () => {
  it('is not handed out again: the next statement, sent at once, runs on a new connection', { timeout: 30_000 }, async () => {
    // One connection: the next statement can only be given the terminated one or a new one.
    const store = await openDatabase({ url: pgUrl!, schema: uniqueSchema('terminated'), poolSize: 1 });
    const admin = new pg.Client({ connectionString: pgUrl! });
    await admin.connect();
    try {
      for (let round = 0; round < 5; round++) {
        const pid = await backendPid(store.db);
        // Its failure is taken as it happens, which may be before the terminating call returns.
        const failed = sql`select pg_sleep(10)`.execute(store.db).then(
          () => undefined,
          (error: unknown) => error,
        );
        await waitFor(
          async () => (await admin.query(`select 1 from pg_stat_activity where pid = $1 and wait_event = 'PgSleep'`, [pid])).rowCount === 1,
          'the statement to be running',
        );
        await admin.query('select pg_terminate_backend($1)', [pid]);
        expect(await failed).toMatchObject({ code: '57P01' });
        expect(await backendPid(store.db)).not.toBe(pid);
      }
    } finally {
      await admin.end();
      await store.close();
    }
  });
});
