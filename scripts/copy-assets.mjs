// What tsc does not copy: the handler templates read their numbered SQL files next to their compiled code
// (dist/handlers/<name>/migrations), and the console serves its page's static files from dist/console/assets.
import { cpSync, existsSync, readdirSync } from 'node:fs';

const root = new URL('../', import.meta.url);
for (const entry of readdirSync(new URL('handlers/', root), { withFileTypes: true })) {
  const migrations = new URL(`handlers/${entry.name}/migrations/`, root);
  if (entry.isDirectory() && existsSync(migrations)) {
    cpSync(migrations, new URL(`dist/handlers/${entry.name}/migrations/`, root), { recursive: true });
  }
}
cpSync(new URL('src/console/assets/', root), new URL('dist/console/assets/', root), { recursive: true });
