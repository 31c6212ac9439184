// The worker's defaults are stated in docs/cli.md and docs/configuration.md; both once said other numbers than the
// code (cli.md: 8 at once, 5 attempts, 5000-600000 ms). Each number the docs give is read back and compared with
// WORKER_DEFAULTS, so that a change of a default fails here until the docs say it too.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { WORKER_DEFAULTS } from '../../src/worker/defaults.js';

const read = (path: string) => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

/** The `{ "worker": … }` object cli.md quotes after "the names and defaults of `WORKER_DEFAULTS`". */
function cliWorkerDefaults(): unknown {
  const text = read('docs/cli.md').replace(/\s*\n\s*/g, ' ');
  const found = /names and defaults of `WORKER_DEFAULTS` \(`(\{ "worker": .*?\} \} \})`/.exec(text);
  if (!found) throw new Error('docs/cli.md no longer quotes the worker defaults as { "worker": … }');
  return JSON.parse(found[1]!);
}

/** The `| \`worker.KEY\` | \`N\` |` rows of configuration.md's table of the file's worker key. */
function configurationRows(): Map<string, number> {
  const rows = new Map<string, number>();
  for (const [, key, value] of read('docs/configuration.md').matchAll(/^\| `worker\.([\w.]+)` \| `(\d+)` \|/gm))
    rows.set(key!, Number(value));
  return rows;
}

describe('the worker defaults the docs state', () => {
  it("docs/cli.md quotes WORKER_DEFAULTS' concurrency, attempts and backoff as the code has them", () => {
    const quoted = cliWorkerDefaults() as { worker: Record<string, unknown> };
    expect(Object.keys(quoted.worker).length).toBeGreaterThanOrEqual(3);
    for (const [key, value] of Object.entries(quoted.worker)) {
      expect(value, `docs/cli.md: worker.${key}`).toEqual(WORKER_DEFAULTS[key as keyof typeof WORKER_DEFAULTS]);
    }
  });

  it("docs/configuration.md's table of the worker key gives WORKER_DEFAULTS' numbers", () => {
    const rows = configurationRows();
    // concurrency, maxPrefetch, maxAttempts, handlerTimeoutMs, pollIntervalMs, stopTimeoutMs, backoff's two
    expect(rows.size).toBeGreaterThanOrEqual(8);
    for (const [key, value] of rows) {
      const inCode = key.split('.').reduce<unknown>((at, part) => (at as Record<string, unknown>)[part], WORKER_DEFAULTS);
      expect(value, `docs/configuration.md: worker.${key}`).toBe(inCode);
    }
  });
});
