// The public surface is the package.json `exports` map and nothing else. This test keeps the run-time exports
// of each entry equal to a committed list, so that adding or removing one is a decision made in review (edit
// test/public-surface.snapshot.json by hand), never a side effect of an `export` in some internal module.
// Entries are imported from their sources: each `./dist/X.js` target is built from `src/X.ts` (tsconfig.build.json:
// rootDir src, outDir dist), and `./dist/handlers/X.js` from `handlers/X.ts` (tsconfig.handlers.json);
// test/packaging.test.ts checks the built package itself.
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const root = new URL('../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8')) as { exports: Record<string, unknown>; files: string[] };
const snapshot = JSON.parse(readFileSync(new URL('public-surface.snapshot.json', import.meta.url), 'utf8')) as Record<string, unknown>;

type Conditions = { types: string; import: string; default: string };
const entries = Object.entries(pkg.exports).filter(([subpath]) => subpath !== './package.json') as [string, Conditions][];

/** `./dist/client/index.js` → `src/client/index.ts`; `./dist/handlers/x/index.js` → `handlers/x/index.ts`. */
function sourceOf(target: string): string {
  const match = /^\.\/dist\/(.+)\.js$/.exec(target);
  if (!match) throw new Error(`export target ${target} is not a .js file under ./dist/`);
  return match[1]!.startsWith('handlers/') ? `${match[1]}.ts` : `src/${match[1]}.ts`;
}

describe('package.json exports', () => {
  it('has the root, client, sync, service, simulator, testing and direct-debit template entries, and package.json', () => {
    expect(Object.keys(pkg.exports)).toEqual([
      '.',
      './client',
      './sync',
      './service',
      './simulator',
      './testing',
      './handlers/direct-debit',
      './package.json',
    ]);
    expect(pkg.exports['./package.json']).toBe('./package.json');
  });

  it.each(entries)(
    '%s: types, import and default (require of the ESM build) point at one built module from src/',
    (_subpath, conditions) => {
      // Order matters to resolvers: the first matching condition wins, and TypeScript wants "types" first.
      expect(Object.keys(conditions)).toEqual(['types', 'import', 'default']);
      expect(conditions.default).toBe(conditions.import);
      expect(conditions.types).toBe(conditions.import.replace(/\.js$/, '.d.ts'));
      expect(existsSync(new URL(sourceOf(conditions.import), root)), sourceOf(conditions.import)).toBe(true);
      expect(pkg.files).toContain('dist');
      expect(pkg.files).toContain('handlers');
    },
  );

  it('every entry has a committed list, and every list an entry', () => {
    const listed = Object.keys(snapshot).filter((key) => key !== '$comment');
    expect(listed).toEqual(entries.map(([subpath]) => subpath));
  });
});

describe('run-time exports of each entry', () => {
  it.each(entries)('%s exports exactly the committed list (test/public-surface.snapshot.json)', async (subpath, conditions) => {
    const module = (await import(new URL(sourceOf(conditions.import), root).href)) as Record<string, unknown>;
    expect(Object.keys(module).sort(), `update test/public-surface.snapshot.json by hand if ${subpath} should change`).toEqual(
      snapshot[subpath],
    );
    for (const [name, value] of Object.entries(module)) expect(value, `${subpath} ${name}`).toBeDefined();
  });

  it.each(entries)('%s names each export (no `export *`, which would pass on whatever a module adds)', (_subpath, conditions) => {
    const source = readFileSync(new URL(sourceOf(conditions.import), root), 'utf8');
    expect(source).not.toMatch(/export\s*\*/);
  });

  it('the root entry leaves the client, the simulator and the test helpers to their own entries', () => {
    const rootNames = new Set(snapshot['.'] as string[]);
    for (const subpath of ['./client', './simulator', './testing']) {
      const shared = (snapshot[subpath] as string[]).filter((name) => rootNames.has(name));
      expect(shared, subpath).toEqual([]);
    }
  });

  it('payhooks/sync holds the sync names the root entry had, as the same objects, plus backfill, reconciliation, verify, the sink kinds and ensureMirrorAccounts', async () => {
    const rootEntry = (await import(new URL('src/index.ts', root).href)) as Record<string, unknown>;
    const syncEntry = (await import(new URL('src/sync/index.ts', root).href)) as Record<string, unknown>;
    const syncNames = snapshot['./sync'] as string[];
    // The same objects, so that `instanceof ConfigError` holds whichever entry the class came from.
    for (const name of syncNames.filter((n) => n in rootEntry)) expect(syncEntry[name], name).toBe(rootEntry[name]);
    // Kept in the root entry for the imports written before payhooks/sync existed; only the new names are not there.
    expect(syncNames.filter((name) => !(name in rootEntry))).toEqual([
      'AmbiguousEndpointError',
      'BACKFILL_DEFAULTS',
      'BACKFILL_RESOURCES',
      'BackfillConflictError',
      'DRIFT_KINDS',
      'NoMirrorError',
      'RECONCILE_DEFAULTS',
      'SINK_KINDS',
      'SINK_KIND_NAMES',
      'VERIFY_DEFAULTS',
      'VERIFY_RESOURCES',
      'VerifyConflictError',
      'defineSinkKind',
      'deliveryInFlight',
      'ensureMirrorAccounts',
      'reconcile',
      'registerSink',
      'runBackfill',
      'verifyMirror',
    ]);
  });
});
