import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');

/** The room of a file under src/: its top folder, or the file itself at the top (`payhooks.ts`). */
function roomOf(file: string): string {
  const [first, ...rest] = relative(src, file).split('/');
  return rest.length ? first! : first!.replace(/\.js$/, '.ts');
}

/** The "may import" column of the Layers table in docs/architecture.md, by room. */
function allowedImports(): Map<string, Set<string>> {
  const text = readFileSync(join(root, 'docs/architecture.md'), 'utf8');
  const section = text.slice(text.indexOf('## Layers'), text.indexOf('## The path of one delivery'));
  const rooms = new Map<string, Set<string>>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const name = /^`([^`]+)`$/.exec(cells[1] ?? '')?.[1];
    if (!name || cells.length < 5) continue;
    const allowed = cells[3] === '–' ? [] : cells[3]!.split(',').map((word) => word.trim());
    rooms.set(name.replace(/\/$/, ''), new Set(allowed.map((word) => word.replace(/\/$/, ''))));
  }
  return rooms;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every relative import and re-export of a file, static or dynamic. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [...text.matchAll(/(?:from\s+|import\s*\(\s*)['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]!);
  return specifiers.map((specifier) => normalize(join(dirname(file), specifier)));
}

describe('the layers of docs/architecture.md', () => {
  const allowed = allowedImports();

  it('name every folder and top-level file of src/', () => {
    const rooms = new Set(sourceFiles(src).map(roomOf));
    expect([...rooms].filter((room) => !allowed.has(room)).sort()).toEqual([]);
    expect([...allowed.keys()].filter((room) => !rooms.has(room)).sort()).toEqual([]);
  });

  it('hold for every import in src/: a room imports only what its row allows', () => {
    const breaches: string[] = [];
    for (const file of sourceFiles(src)) {
      const from = roomOf(file);
      for (const target of importsOf(file)) {
        const to = roomOf(target);
        if (to !== from && !allowed.get(from)?.has(to))
          breaches.push(`${relative(root, file)} imports ${relative(root, target)} (${from} → ${to})`);
      }
    }
    expect(breaches).toEqual([]);
  });

  it('catch a breach: the check sees an import the table does not allow', () => {
    // The rule is only as good as its reading of imports: store/ importing the CLI must show.
    const from = roomOf(join(src, 'store/inbox.ts'));
    const to = roomOf(normalize(join(src, 'store', '../cli/main.js')));
    expect([from, to]).toEqual(['store', 'cli']);
    expect(allowed.get('store')?.has('cli')).toBe(false);
    expect(allowed.get('cli')?.has('service')).toBe(true);
  });
});
