import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { builtIsFresh } from './cli.js';

const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/**
 * How a forked fixture written as a plain module (`test/fixtures/*.mjs`) loads payhooks: the fresh build, as users
 * load it, with no loader; else the sources through tsx (see `builtIsFresh`). The fixture imports the entry named by
 * `PAYHOOKS_TEST_ENTRY`. A process started from the build costs about a third of the CPU of one through tsx, which
 * counts where a test starts dozens of them.
 *
 * @example
 * fork(fixture, [], { execArgv: library.execArgv, env: { ...process.env, ...library.env } })
 */
export const library: { execArgv: string[]; env: { PAYHOOKS_TEST_ENTRY: string } } = builtIsFresh
  ? { execArgv: [], env: { PAYHOOKS_TEST_ENTRY: new URL('../../dist/index.js', import.meta.url).href } }
  : { execArgv: ['--import', tsx], env: { PAYHOOKS_TEST_ENTRY: new URL('../../src/index.ts', import.meta.url).href } };
