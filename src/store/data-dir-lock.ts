import { readFileSync, rmSync, writeFileSync } from 'node:fs';

/**
 * Takes an exclusive lock on an embedded database folder: PGlite is one process's database, and a second
 * process opening the same files would corrupt them. A lock left by a dead process is taken over.
 * Resolves to the release function.
 */
export function lockDataDir(dataDir: string): () => void {
  const lockFile = `${dataDir.replace(/\/$/, '')}.lock`;
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      return () => rmSync(lockFile, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const holder = Number(readFileSync(lockFile, 'utf8'));
      if (holder && holder !== process.pid && isAlive(holder)) {
        throw new Error(
          `The embedded database at ${dataDir} is in use by process ${holder} (a running \`payhooks serve\`?). ` +
            'PGlite allows one process at a time: stop that process, or use a PostgreSQL server (DATABASE_URL) to share the inbox.',
        );
      }
      rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`Could not lock the embedded database at ${dataDir}.`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
