import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { collect } from './cli.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
const recorder = new URL('./record-module-loads.mjs', import.meta.url).href;

/** The package a module URL belongs to (`@nats-io/jetstream`, `amqplib`), or undefined for payhooks' own sources and builtins. */
export function packageOf(url: string): string | undefined {
  const at = url.lastIndexOf('/node_modules/');
  if (at < 0) return undefined;
  const [scope, name] = url.slice(at + '/node_modules/'.length).split('/');
  return scope?.startsWith('@') ? `${scope}/${name}` : scope;
}

/**
 * Runs `code`, the body of an ES module (top-level await allowed), in a fresh `node --import tsx` whose working
 * directory is the repository, so that it imports the sources (`await import('./src/index.ts')`): the package's
 * own entries resolve to dist/, which may be stale. Every ES module the process loads is recorded by
 * record-module-loads.mjs; `mark(label)` in the code takes a snapshot. Resolves to label → the packages under
 * node_modules loaded by then, sorted.
 *
 * @example
 * const marks = await packagesLoadedBy(`await import('./src/client/index.ts'); mark('client');`);
 * expect(marks.client).not.toContain('kysely');
 */
export async function packagesLoadedBy(code: string, timeoutMs = 60_000): Promise<Record<string, string[]>> {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-loads-'));
  const log = join(dir, 'loads.txt');
  const marks = join(dir, 'marks.json');
  const prelude = `
    import { readFileSync as __read, writeFileSync as __write } from 'node:fs';
    const __marks = {};
    const mark = (label) => {
      __marks[label] = __read(process.env.PAYHOOKS_TEST_LOAD_LOG, 'utf8').split('\\n').filter(Boolean);
      __write(process.env.PAYHOOKS_TEST_MARKS, JSON.stringify(__marks));
    };
  `;
  try {
    const child = spawn(process.execPath, ['--import', tsx, '--import', recorder, '--input-type=module', '-e', `${prelude}\n${code}`], {
      cwd: repo,
      env: { ...process.env, PAYHOOKS_TEST_LOAD_LOG: log, PAYHOOKS_TEST_MARKS: marks },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const result = await collect(child, timeoutMs);
    if (result.code !== 0) throw new Error(`the child exited with ${result.code}:\n${result.stderr}`);
    const urls = JSON.parse(readFileSync(marks, 'utf8')) as Record<string, string[]>;
    return Object.fromEntries(
      Object.entries(urls).map(([label, loaded]) => [
        label,
        [...new Set(loaded.map(packageOf).filter((name): name is string => name !== undefined))].sort(),
      ]),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
