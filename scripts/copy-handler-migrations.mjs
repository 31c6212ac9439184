// The handler templates read their numbered SQL files next to their compiled code (dist/handlers/<name>/migrations),
// and tsc copies only what it compiles; so the build copies each template's migrations folder after it.
import { cpSync, existsSync, readdirSync } from 'node:fs';

const source = new URL('../handlers/', import.meta.url);
const target = new URL('../dist/handlers/', import.meta.url);
for (const entry of readdirSync(source, { withFileTypes: true })) {
  const migrations = new URL(`${entry.name}/migrations/`, source);
  if (entry.isDirectory() && existsSync(migrations)) {
    cpSync(migrations, new URL(`${entry.name}/migrations/`, target), { recursive: true });
  }
}
