import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { describeDatabaseUrl } from '../internal/describe-url.js';
import { writeFileWhole } from '../internal/write-whole.js';

// A `payhooks events list` typed without DATABASE_URL beside a serve on PostgreSQL opened a new, empty embedded
// database and said `no events`. So serve on PostgreSQL leaves a note where the embedded database would be (beside
// its data directory, `.payhooks/`), naming the database it uses without password or query; the commands that find
// it while opening the embedded database say which DATABASE_URL they were probably meant to have. It stays after
// serve stops: the events it stored are still there.

const markerSchema = z.object({
  version: z.literal(1),
  /** The connection string as it may be shown: no password, no query. */
  database: z.string(),
  schema: z.string(),
  pid: z.number().int(),
  startedAt: z.string(),
});

/** What a serve on PostgreSQL noted in the folder of the embedded database. */
export type PostgresMarker = z.infer<typeof markerSchema>;

/** `<the data directory's folder>/serve-postgres.json`: `.payhooks/serve-postgres.json` by default. */
export function postgresMarkerPath(dataDir: string): string {
  return join(dirname(resolve(dataDir)), 'serve-postgres.json');
}

/**
 * Notes that a serve uses the PostgreSQL database `url` (shown without its password). Best effort: a folder serve may
 * not write to (a read-only container) costs only the note.
 */
export function writePostgresMarker(dataDir: string, url: string, schema: string): void {
  if (dataDir.startsWith('memory://')) return;
  const path = postgresMarkerPath(dataDir);
  const marker: PostgresMarker = {
    version: 1,
    database: describeDatabaseUrl(url),
    schema,
    pid: process.pid,
    startedAt: new Date().toISOString(),
  };
  try {
    mkdirSync(dirname(path), { recursive: true });
    writeFileWhole(path, `${JSON.stringify(marker)}\n`);
  } catch {
    // Only a hint for the command line is lost.
  }
}

/** The note a serve on PostgreSQL left beside `dataDir`, if it reads well. */
export function readPostgresMarker(dataDir: string): PostgresMarker | undefined {
  try {
    return markerSchema.parse(JSON.parse(readFileSync(postgresMarkerPath(dataDir), 'utf8')));
  } catch {
    return undefined;
  }
}
