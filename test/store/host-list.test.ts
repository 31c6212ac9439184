// A DATABASE_URL of several hosts, against the real server: a host that refuses connections is passed over (for the
// pool and for LISTEN), and with read-write a server that does not take writes is refused. The failover itself, with a
// real primary and standby, is test/soak/ha-failover.test.ts.
import { createServer } from 'node:net';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { waitFor } from '../helpers/wait.js';

/** A loopback port nothing listens on: bound once, then closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe.skipIf(!pgUrl)('a DATABASE_URL listing several hosts', () => {
  it('connects to the host that answers and accepts writes, for statements and for LISTEN', { timeout: 30_000 }, async () => {
    const real = new URL(pgUrl!);
    const dead = await closedPort();
    const url = `${real.protocol}//${real.username ? `${real.username}@` : ''}127.0.0.1:${dead},${real.host}${real.pathname}`;
    const store = await openDatabase({ url, schema: uniqueSchema('hosts'), poolSize: 2 });
    try {
      const { rows } = await sql<{
        port: number;
        ro: string;
      }>`select inet_server_port() as port, current_setting('transaction_read_only') as ro`.execute(store.db);
      expect(rows).toEqual([{ port: Number(real.port || 5432), ro: 'off' }]);
      const heard: string[] = [];
      const unlisten = await store.listen('host_list_test', (payload) => heard.push(payload));
      await sql`select pg_notify('host_list_test', 'one')`.execute(store.db);
      await waitFor(() => heard.length === 1, 'the notification');
      expect(heard).toEqual(['one']);
      await unlisten();
    } finally {
      await store.close();
    }
  });

  it('drops a connection whose write is refused with 25006 (a demoted primary) and goes on, through the host list, on a new one', {
    timeout: 30_000,
  }, async () => {
    const real = new URL(pgUrl!);
    const dead = await closedPort();
    const url = `${real.protocol}//${real.username ? `${real.username}@` : ''}127.0.0.1:${dead},${real.host}${real.pathname}`;
    const store = await openDatabase({ url, schema: uniqueSchema('hosts'), poolSize: 1 });
    try {
      const pid = async () => (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(store.db)).rows[0]!.pid;
      const first = await pid();
      // The session turns read-only, as a primary demoted under its connections does.
      await sql`set session characteristics as transaction read only`.execute(store.db);
      const refused = await sql`create temporary table demoted (x int)`.execute(store.db).then(
        () => 'written',
        (error: unknown) => (error as { code?: string }).code,
      );
      expect(refused).toBe('25006');
      // The next statement runs on a new connection, found by trying the hosts again (the dead one first), and writes.
      expect(await pid()).not.toBe(first);
      await sql`create temporary table demoted (x int)`.execute(store.db);
    } finally {
      await store.close();
    }
  });

  it('refuses a server that does not accept writes when read-write is asked for, with SQLSTATE 25006', { timeout: 30_000 }, async () => {
    const readOnly = new URL(pgUrl!);
    readOnly.searchParams.set('target_session_attrs', 'read-write');
    readOnly.searchParams.set('options', '-c default_transaction_read_only=on');
    const store = await openDatabase({ url: readOnly.toString(), schema: uniqueSchema('hosts'), poolSize: 1 });
    try {
      const failure = await sql`select 1`.execute(store.db).then(
        () => 'ran',
        (error: unknown) => error,
      );
      expect(failure).toMatchObject({ name: 'NotPrimaryError', code: '25006' });
      // The same server with any session accepted is used as it is.
      readOnly.searchParams.set('target_session_attrs', 'any');
      const anyStore = await openDatabase({ url: readOnly.toString(), schema: uniqueSchema('hosts'), poolSize: 1 });
      try {
        expect((await sql<{ transaction_read_only: string }>`show transaction_read_only`.execute(anyStore.db)).rows).toEqual([
          { transaction_read_only: 'on' },
        ]);
      } finally {
        await anyStore.close();
      }
    } finally {
      await store.close();
    }
  });
});
