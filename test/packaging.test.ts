// The built package as an app gets it: dist/ from `npm run build`, linked into a throw-away project, loaded by
// real `node` child processes with require() (CommonJS, through require(esm)) and with import.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIfStale } from './helpers/cli.js';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../', import.meta.url));
const snapshot = JSON.parse(readFileSync(new URL('public-surface.snapshot.json', import.meta.url), 'utf8')) as Record<string, string[]>;
const specifiers = {
  '.': 'payhooks',
  './client': 'payhooks/client',
  './sync': 'payhooks/sync',
  './service': 'payhooks/service',
  './simulator': 'payhooks/simulator',
  './testing': 'payhooks/testing',
  './handlers/direct-debit': 'payhooks/handlers/direct-debit',
};

let app: string;

/** Runs `node … -e code` in the app project; resolves to its stdout parsed as JSON. */
async function node(code: string, flags: string[] = []): Promise<unknown> {
  const { stdout } = await run(process.execPath, [...flags, '-e', code], { cwd: app, timeout: 60_000 });
  return JSON.parse(stdout);
}

beforeAll(async () => {
  await buildIfStale();
  app = mkdtempSync(join(tmpdir(), 'payhooks-app-'));
  // What `npm init -y` writes that matters here: no "type", so .js and -e code are CommonJS.
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'cjs-app', version: '1.0.0', private: true }));
  mkdirSync(join(app, 'node_modules'));
  symlinkSync(repo, join(app, 'node_modules', 'payhooks'), 'dir');
}, 200_000);
afterAll(() => {
  if (app) rmSync(app, { recursive: true, force: true });
});

describe('require() from a CommonJS project', () => {
  it('loads every entry, with the same exports as the committed list, and nothing else', async () => {
    const keys = await node(`
      const out = {};
      for (const [subpath, specifier] of Object.entries(${JSON.stringify(specifiers)})) out[subpath] = Object.keys(require(specifier)).sort();
      out.version = require('payhooks/package.json').version;
      try { require('payhooks/dist/store/inbox.js'); out.internal = 'loaded'; } catch (err) { out.internal = err.code; }
      console.log(JSON.stringify(out));`);
    const { version, internal, ...entries } = keys as Record<string, unknown>;
    // Internal modules are not reachable (src/internal/README.md).
    expect(internal).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
    expect(entries).toEqual(Object.fromEntries(Object.keys(specifiers).map((subpath) => [subpath, snapshot[subpath]])));
    expect(version).toBe(JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).version);
  });

  it('gives working functions: createPayhooks receives a delivery signed by payhooks/testing', async () => {
    const result = await node(`
      const { createPayhooks, createDefaultScheme, createLogger, PayhooksError } = require('payhooks');
      const { createClient } = require('payhooks/client');
      const { startSimulator } = require('payhooks/simulator');
      const { signedRequest, exampleEvent } = require('payhooks/testing');
      (async () => {
        const hooks = createPayhooks({ secret: 's3cret', database: { dataDir: 'memory://' }, logger: createLogger({ level: 'silent' }) });
        const response = await hooks.receive(signedRequest(exampleEvent('INVOICE_PAID'), { secret: 's3cret' }));
        await hooks.close();
        console.log(JSON.stringify({
          types: [createPayhooks, createDefaultScheme, createClient, startSimulator, signedRequest].map((f) => typeof f),
          error: new PayhooksError('x').message,
          status: response.status,
          body: JSON.parse(response.body),
        }));
      })().catch((err) => { console.error(err); process.exit(1); });`);
    expect(result).toEqual({
      types: ['function', 'function', 'function', 'function', 'function'],
      error: 'payhooks: x',
      status: 200,
      body: { received: true },
    });
  });

  it('on a Node without require(esm), fails with ERR_REQUIRE_ESM (which says why), not "not exported"', async () => {
    // Node 20.11–20.18 behave like this flag; a "module-sync" condition in place of "default" would answer
    // ERR_PACKAGE_PATH_NOT_EXPORTED there, which misleads.
    const code = `try { require('payhooks'); console.log('null'); } catch (err) { console.log(JSON.stringify(err.code)); }`;
    expect(await node(code, ['--no-experimental-require-module'])).toBe('ERR_REQUIRE_ESM');
  });
});

describe('import from an ES module', () => {
  it('loads every entry with the committed exports, and never loads express', async () => {
    // A resolve hook that refuses `express`: the adapters only use its types, so no entry may need it at run time.
    const hook = `export async function resolve(specifier, context, next) {
      if (specifier === 'express' || specifier.startsWith('express/')) throw new Error('express was imported at run time by ' + context.parentURL);
      return next(specifier, context);
    }`;
    const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
    const keys = await node(
      `const out = {};
      for (const [subpath, specifier] of Object.entries(${JSON.stringify(specifiers)})) out[subpath] = Object.keys(await import(specifier)).sort();
      try { await import('express'); out.hook = 'express loaded'; } catch (err) { out.hook = err.message; }
      console.log(JSON.stringify(out));`,
      ['--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module'],
    );
    const { hook: hookSays, ...entries } = keys as Record<string, unknown>;
    expect(hookSays).toMatch(/^express was imported at run time/);
    expect(entries).toEqual(Object.fromEntries(Object.keys(specifiers).map((subpath) => [subpath, snapshot[subpath]])));
  });

  it.each([
    // The broker clients load only when a RabbitMQ or NATS publisher opens; the API client needs no database layer.
    {
      title: 'payhooks and payhooks/sync load no broker client',
      imports: ['payhooks', 'payhooks/sync'],
      refused: ['amqplib', '@nats-io/transport-node', '@nats-io/jetstream'],
    },
    { title: 'payhooks/client does not load kysely', imports: ['payhooks/client'], refused: ['kysely'] },
  ])('$title', async ({ imports, refused }) => {
    const hook = `const refused = ${JSON.stringify(refused)};
    export async function resolve(specifier, context, next) {
      if (refused.some((name) => specifier === name || specifier.startsWith(name + '/'))) throw new Error(specifier + ' was imported by ' + context.parentURL);
      return next(specifier, context);
    }`;
    const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(hook)}`)});`;
    const result = await node(
      `const out = { entries: {} };
      for (const specifier of ${JSON.stringify(imports)}) out.entries[specifier] = Object.keys(await import(specifier)).length > 0;
      out.hook = [];
      for (const name of ${JSON.stringify(refused)}) out.hook.push(await import(name).then(() => name + ' loaded', (err) => err.message));
      console.log(JSON.stringify(out));`,
      ['--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module'],
    );
    const { entries, hook: hookSays } = result as { entries: Record<string, boolean>; hook: string[] };
    expect(entries).toEqual(Object.fromEntries(imports.map((specifier) => [specifier, true])));
    // The hook does refuse each of them (so the entries' loading above would have failed had they imported one).
    expect(hookSays).toEqual(refused.map((name) => expect.stringContaining(`${name} was imported by `)));
  });
});

describe('dist/', () => {
  it('holds no run-time import of express', () => {
    const files = (readdirSync(join(repo, 'dist'), { recursive: true }) as string[]).filter((file) => file.endsWith('.js'));
    expect(files).toContain(join('testing', 'index.js'));
    const offenders = files.filter((file) =>
      /\bfrom\s*['"]express['"]|\bimport\s*\(\s*['"]express['"]|\brequire\s*\(\s*['"]express['"]|^import\s*['"]express['"]/m.test(
        readFileSync(join(repo, 'dist', file), 'utf8'),
      ),
    );
    expect(offenders).toEqual([]);
  });

  it('is what npm would publish: every exports target is in the package', async () => {
    const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: repo, timeout: 60_000 });
    const [packed] = JSON.parse(stdout) as [{ files: { path: string }[] }];
    const paths = new Set(packed.files.map((file) => file.path));
    const exportsMap = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).exports as Record<
      string,
      string | Record<string, string>
    >;
    const targets = Object.values(exportsMap).flatMap((target) => (typeof target === 'string' ? [target] : Object.values(target)));
    for (const target of targets) expect(paths, target).toContain(target.replace(/^\.\//, ''));
    // The direct-debit templates read their SQL next to their compiled code, and ship their sources to copy from.
    expect(paths).toContain('dist/handlers/direct-debit/migrations/001_direct_debit.sql');
    expect(paths).toContain('handlers/direct-debit/index.ts');
    // payhooks init copies from templates/; the scaffolded files point at docs/ inside node_modules/payhooks.
    expect(paths).toContain('templates/init/minimal/payhooks.handlers.mjs');
    expect(paths).toContain('docs/configuration.md');
    // The console page's files, read next to its compiled code at run time.
    for (const file of ['index.html', 'console.js', 'console.css']) expect(paths).toContain(`dist/console/assets/${file}`);
    expect([...paths].some((path) => path.startsWith('test/') || path.startsWith('src/'))).toBe(false);
  });
});
