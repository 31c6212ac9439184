import { renameSync, writeFileSync } from 'node:fs';

/**
 * Writes `text` to `path` whole or not at all: into a file of this process's beside it, then renamed over it, so that
 * a reader never sees half of it (a command reading a session file while serve writes it).
 *
 * @example
 * writeFileWhole('.payhooks/pgdata.serve.json', json, { mode: 0o600 });
 */
export function writeFileWhole(path: string, text: string, options: { mode?: number } = {}): void {
  const partial = `${path}.${process.pid}.tmp`;
  writeFileSync(partial, text, options);
  renameSync(partial, path);
}
