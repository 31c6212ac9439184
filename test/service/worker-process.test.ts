// The worker child's start, without starting one: which node options it inherits, which entry it runs, and the
// handlers a function alone cannot hand it. test/cli/serve-worker-child.test.ts and test/service/app-worker-child.test.ts
// start real ones.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { runService } from '../../src/service/run-service.js';
import { defineServiceConfig } from '../../src/service/service-config.js';
import { WORKER_ENTRY, workerNodeArgs } from '../../src/service/worker-process.js';

describe('the worker child', () => {
  it("runs payhooks' own command line, beside the service's modules, not the script that started its parent", () => {
    expect(WORKER_ENTRY).toBe(fileURLToPath(new URL('../../src/cli/entry.ts', import.meta.url)));
    expect(existsSync(WORKER_ENTRY)).toBe(true);
    expect(WORKER_ENTRY).not.toBe(process.argv[1]);
  });

  it("inherits the parent's node options but none that run inline code, supervise, test or debug on its port", () => {
    const tsx = 'file:///app/node_modules/tsx/dist/loader.mjs';
    expect(
      workerNodeArgs([
        '--max-old-space-size=512',
        '--import',
        tsx,
        '--input-type=module',
        '-e',
        'import("./app.js")',
        '--watch',
        '--watch-path',
        'src',
        '--inspect=9229',
        '--enable-source-maps',
        '--print',
        '1',
        '--test-reporter=spec',
      ]),
    ).toEqual(['--max-old-space-size=512', '--import', tsx, '--enable-source-maps']);
    expect(workerNodeArgs(['--liftoff-only', '-r', './preload.cjs'])).toEqual(['--liftoff-only', '-r', './preload.cjs']);
  });
});

describe('runService with handlers as a function only', () => {
  const logger = pino({ level: 'silent' });
  const register = () => undefined;

  // On the embedded database nothing splits, and it is refused all the same: an app tried there would otherwise fail
  // first in production. Nothing is opened: the port below is closed, the memory database never made.
  it.each([
    ['PostgreSQL', { url: 'postgres://postgres@127.0.0.1:9/none' }],
    ['the embedded database', { dataDir: 'memory://' }],
  ])('is refused on %s before anything starts, saying what to give instead', async (_name, database) => {
    const config = defineServiceConfig({ receiver: { port: 0, host: '127.0.0.1', secrets: ['s'] }, database });
    await expect(runService(config, { logger, register })).rejects.toThrow(
      /without handlersModule: .* Give handlersModule, .* or singleProcess: true/,
    );
  });
});
