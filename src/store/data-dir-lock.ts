import { createHash, randomBytes } from 'node:crypto';
import { linkSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { PayhooksError } from '../errors.js';
import { realDataDir } from './real-data-dir.js';

/** The embedded database is another process's: stop it, or share a PostgreSQL server instead. */
export class DataDirInUseError extends PayhooksError {
  constructor(
    readonly dataDir: string,
    readonly holderPid: number | undefined,
  ) {
    super(
      `The embedded database at ${dataDir} is in use by process ${holderPid ?? '(unknown)'} (a running \`payhooks serve\`?). ` +
        'PGlite allows one process at a time: stop that process, or use a PostgreSQL server (DATABASE_URL) to share the inbox.',
    );
  }
}

/** Releases the lock; safe to call more than once. */
export type ReleaseLock = () => Promise<void>;

/**
 * Makes this process the one owner of an embedded database folder: PGlite is one process's database, and a
 * second process writing the same files would corrupt them.
 *
 * On Linux the lock is a listening socket in the abstract namespace, named after the folder: binding it is
 * atomic, and the kernel releases it when the process dies, however it dies, so there is no stale lock to
 * recover. Elsewhere it is a lock file made atomically (a hard link to a file already holding the pid, so no
 * one ever reads it half-written); a lock file whose process is gone is taken over by renaming it aside
 * first, so that of several processes finding it stale only one removes it. Either way `<dataDir>.lock`
 * names the owner's pid, for the error a second process gets.
 *
 * The lock is keyed by the folder's real path ({@link realDataDir}), not by the name it is given: through a
 * symbolic link, or with `..`, the same folder meets the same lock, and {@link DataDirInUseError} names that path.
 *
 * @example
 * const release = await lockDataDir('/srv/app/.payhooks/pgdata');
 * // … open PGlite …
 * await release();
 */
export async function lockDataDir(dataDir: string, options: { strategy?: LockStrategy } = {}): Promise<ReleaseLock> {
  const folder = realDataDir(dataDir);
  const pidFile = `${folder}.lock`;
  const strategy = options.strategy ?? (process.platform === 'linux' ? 'socket' : 'file');
  return strategy === 'socket' ? lockWithAbstractSocket(folder, pidFile) : lockWithFile(folder, pidFile);
}

/** How the lock is held: `socket` (Linux only, released by the kernel) or `file` (anywhere). Tests pick one. */
export type LockStrategy = 'socket' | 'file';

async function lockWithAbstractSocket(dataDir: string, pidFile: string): Promise<ReleaseLock> {
  const name = `\0payhooks-pglite-${createHash('sha256').update(dataDir).digest('hex').slice(0, 40)}`;
  const server = createServer((socket) => socket.destroy());
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // exclusive: a cluster worker must not share the primary's handle, or two processes would own it.
      server.listen({ path: name, exclusive: true }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE') throw new DataDirInUseError(dataDir, readPid(pidFile));
    throw err;
  }
  // The socket must not keep the process alive on its own; it lives as long as the process does.
  server.unref();
  writeFileSync(pidFile, `${process.pid}\n`);
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    if (readPid(pidFile) === process.pid) rmSync(pidFile, { force: true });
    await new Promise<void>((resolve) => (server as Server).close(() => resolve()));
  };
}

function lockWithFile(dataDir: string, pidFile: string): ReleaseLock {
  const token = `${process.pid}\n${randomBytes(8).toString('hex')}\n`;
  for (let tries = 0; tries < 5; tries++) {
    if (linkNewFile(pidFile, token)) {
      return async () => {
        if (readText(pidFile) === token) rmSync(pidFile, { force: true });
      };
    }
    const seen = readText(pidFile);
    if (seen === undefined) continue; // released meanwhile: try again
    const holder = Number.parseInt(seen, 10);
    if (holder > 0 && isAlive(holder)) throw new DataDirInUseError(dataDir, holder);
    // Stale. Move it aside and check that what moved is the stale lock, not a fresh one taken meanwhile.
    const aside = `${pidFile}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      renameSync(pidFile, aside);
    } catch {
      continue; // someone else moved it first
    }
    const moved = readText(aside);
    if (moved !== seen && moved !== undefined) {
      // We moved a live owner's lock: put it back (fails only if yet another process took the path).
      linkNewFile(pidFile, moved);
      rmSync(aside, { force: true });
      throw new DataDirInUseError(dataDir, Number.parseInt(moved, 10));
    }
    rmSync(aside, { force: true });
  }
  throw new PayhooksError(`Could not lock the embedded database at ${dataDir}: its lock file ${pidFile} keeps changing.`);
}

/** Creates `path` holding `content`, atomically: false when it exists already. */
function linkNewFile(path: string, content: string): boolean {
  const temp = `${path}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(temp, content);
  try {
    linkSync(temp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    rmSync(temp, { force: true });
  }
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function readPid(path: string): number | undefined {
  const pid = Number.parseInt(readText(path) ?? '', 10);
  return pid > 0 ? pid : undefined;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
