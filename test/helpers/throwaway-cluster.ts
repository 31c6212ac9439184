// A PostgreSQL server of a test's own, for what must never be done to the shared one at 127.0.0.1:5432: restarting
// it, filling its connection slots, reconfiguring it. Debian's PostgreSQL 15 binaries, a data directory in a temporary
// folder, a free loopback port, the unix socket in that folder. initdb and the server refuse to run as root, so as
// root they run as the `postgres` user.
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Where Debian puts PostgreSQL 15's programs (initdb, pg_ctl). */
export const PG_BIN = '/usr/lib/postgresql/15/bin';

/** Whether a throwaway cluster can be made here; a file skips its tests (with a message) when not. */
export const throwawayClusterAvailable: boolean = existsSync(join(PG_BIN, 'initdb')) && existsSync(join(PG_BIN, 'pg_ctl'));

/** Options of {@link startThrowawayCluster}. */
export interface ThrowawayClusterOptions {
  /** The server's max_connections (superuser_reserved_connections is 0, so all are usable). Default 20. */
  maxConnections?: number;
  /** More `-c name=value` settings. */
  settings?: Record<string, string | number>;
}

/** A running throwaway server. */
export interface ThrowawayCluster {
  readonly port: number;
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication). */
  readonly url: string;
  readonly dataDir: string;
  /** Stops the server (fast shutdown: sessions are ended) and starts it again on the same port. */
  restart(): Promise<void>;
  /** Stops it (immediate) and removes its folder. */
  stop(): Promise<void>;
  /** The server's log so far, for a failing test's message. */
  log(): string;
}

/** A free TCP port on loopback (bound, then released). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** The uid and gid to run PostgreSQL's programs as: the `postgres` user when this process is root. */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
  return { uid, gid };
}

/**
 * Makes and starts a PostgreSQL 15 server of the test's own (initdb, then pg_ctl start, about 2 s), on a free loopback
 * port, fsync off. Stop it in `afterAll`.
 *
 * @example
 * const cluster = await startThrowawayCluster({ maxConnections: 8 });
 * const store = await openDatabase({ url: cluster.url, schema: 'x' });
 * await cluster.restart();
 * await cluster.stop();
 */
export async function startThrowawayCluster(options: ThrowawayClusterOptions = {}): Promise<ThrowawayCluster> {
  const folder = mkdtempSync(join(tmpdir(), 'payhooks-cluster-'));
  const dataDir = join(folder, 'data');
  const user = runAs();
  if (user) chownSync(folder, user.uid, user.gid);
  const as = user ? { uid: user.uid, gid: user.gid } : {};
  const env = { ...process.env, LC_ALL: 'C' };
  await run(join(PG_BIN, 'initdb'), ['-D', dataDir, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8'], { ...as, env });
  const port = await freePort();
  const settings: Record<string, string | number> = {
    port,
    listen_addresses: '127.0.0.1',
    unix_socket_directories: folder,
    max_connections: options.maxConnections ?? 20,
    superuser_reserved_connections: 0,
    fsync: 'off',
    synchronous_commit: 'off',
    full_page_writes: 'off',
    ...options.settings,
  };
  const serverOptions = Object.entries(settings)
    .map(([name, value]) => `-c ${name}=${value}`)
    .join(' ');
  const logFile = join(folder, 'server.log');
  const pgCtl = (args: string[]) => run(join(PG_BIN, 'pg_ctl'), ['-D', dataDir, '-l', logFile, '-w', '-t', '60', ...args], { ...as, env });
  await pgCtl(['-o', serverOptions, 'start']);
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dataDir,
    async restart() {
      // pg_ctl restart starts it with the options it was last started with (postmaster.opts).
      await pgCtl(['-m', 'fast', 'restart']);
    },
    async stop() {
      await pgCtl(['-m', 'immediate', 'stop']).catch(() => undefined);
      rmSync(folder, { recursive: true, force: true });
    },
    log() {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
  };
}
