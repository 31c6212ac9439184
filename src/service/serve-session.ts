import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { writeFileWhole } from '../internal/write-whole.js';
import { z } from 'zod';
import { realDataDir } from '../store/real-data-dir.js';

// `payhooks serve` on the embedded database holds it alone (PGlite admits one process). So that `payhooks events`
// and `payhooks replay` still work beside it, serve writes where it answers and a token for this machine's
// command line next to the database's lock file, readable by its user only, and removes it when it stops.

const sessionSchema = z.object({
  version: z.literal(1),
  pid: z.number().int(),
  url: z.string(),
  token: z.string().min(32),
});

/** Where a running serve can be asked about the embedded database it holds. */
export type ServeSession = z.infer<typeof sessionSchema>;

/** `<dataDir>.serve.json`, beside `<dataDir>.lock`: by the folder's real path, as the lock, whatever name it is given. */
export function serveSessionPath(dataDir: string): string {
  return `${realDataDir(dataDir)}.serve.json`;
}

/** A token for the local command line: 256 random bits. */
export function newLocalToken(): string {
  return randomBytes(32).toString('base64url');
}

/** Writes the session file (mode 0600), whole or not at all. */
export function writeServeSession(dataDir: string, session: Omit<ServeSession, 'version'>): void {
  writeFileWhole(serveSessionPath(dataDir), `${JSON.stringify({ version: 1, ...session })}\n`, { mode: 0o600 });
}

/** Removes the session file if it is this process's. */
export function removeServeSession(dataDir: string): void {
  if (readServeSession(dataDir)?.pid === process.pid) rmSync(serveSessionPath(dataDir), { force: true });
}

/** The session of the serve holding `dataDir`, if it left one that reads well. */
export function readServeSession(dataDir: string): ServeSession | undefined {
  try {
    return sessionSchema.parse(JSON.parse(readFileSync(serveSessionPath(dataDir), 'utf8')));
  } catch {
    return undefined;
  }
}
