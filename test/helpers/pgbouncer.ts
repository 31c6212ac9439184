// A PgBouncer of a test's own in front of a PostgreSQL server: Debian's `pgbouncer` (1.18: no prepared statements
// across transactions), its ini and userlist in a temporary folder, a free loopback port, pool_mode transaction by
// default. PgBouncer refuses to run as root, so as root it runs as the `postgres` user.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './throwaway-cluster.js';

/** Where Debian installs PgBouncer. */
export const PGBOUNCER = '/usr/sbin/pgbouncer';

/** Whether PgBouncer is installed; a file skips its tests (with a message) when not. `.ci/run` installs it. */
export const pgbouncerAvailable: boolean = existsSync(PGBOUNCER);

/** Options of {@link startPgBouncer}. */
export interface PgBouncerOptions {
  /** The server behind it, a `postgres://user@host:port/database` URL (trust authentication). */
  serverUrl: string;
  /** Default `transaction`. */
  poolMode?: 'transaction' | 'session';
  /** Server connections per user and database. Default 10. */
  poolSize?: number;
}

/** A running PgBouncer. */
export interface RunningPgBouncer {
  readonly port: number;
  /** The same user and database as the server's URL, through PgBouncer. */
  readonly url: string;
  /** Stops it (SIGTERM, then SIGKILL after 5 s) and removes its folder. */
  stop(): Promise<void>;
  /** What it has written to its log so far. */
  output(): string;
}

/**
 * Starts PgBouncer in front of `serverUrl` and resolves once it accepts a query through it.
 *
 * @example
 * const bouncer = await startPgBouncer({ serverUrl: pgUrl });
 * const store = await openDatabase({ url: bouncer.url, pooler: 'transaction', schema });
 * await bouncer.stop();
 */
export async function startPgBouncer(options: PgBouncerOptions): Promise<RunningPgBouncer> {
  const server = new URL(options.serverUrl);
  const user = decodeURIComponent(server.username) || 'postgres';
  const database = server.pathname.slice(1) || 'postgres';
  const folder = mkdtempSync(join(tmpdir(), 'payhooks-pgbouncer-'));
  const port = await freePort();
  const ini = join(folder, 'pgbouncer.ini');
  writeFileSync(
    ini,
    [
      '[databases]',
      `${database} = host=${server.hostname} port=${server.port || 5432} dbname=${database}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      `unix_socket_dir = ${folder}`,
      'auth_type = trust',
      `auth_file = ${join(folder, 'userlist.txt')}`,
      `pool_mode = ${options.poolMode ?? 'transaction'}`,
      `default_pool_size = ${options.poolSize ?? 10}`,
      'max_client_conn = 500',
      // node-postgres sends no startup parameter PgBouncer does not know, but a test's application_name is tracked.
      'ignore_startup_parameters = extra_float_digits',
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  writeFileSync(join(folder, 'userlist.txt'), `"${user}" ""\n`);
  let uid: number | undefined;
  let gid: number | undefined;
  if (process.getuid?.() === 0) {
    uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(folder, uid, gid);
    for (const file of ['pgbouncer.ini', 'userlist.txt']) chownSync(join(folder, file), uid, gid);
  }
  const child: ChildProcess = spawn(PGBOUNCER, [ini], { uid, gid, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  child.on('error', (err) => (output += `\n[spawn] ${err.message}`));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${database}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(folder, { recursive: true, force: true });
  };
  // Ready once a query goes through (its listening socket may open a moment after the process starts).
  const deadline = Date.now() + 20_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      break;
    } catch (err) {
      await client.end().catch(() => undefined);
      if (child.exitCode !== null || Date.now() > deadline) {
        await stop();
        throw new Error(`PgBouncer did not start: ${String(err)}\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return { port, url, stop, output: () => output };
}
