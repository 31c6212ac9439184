// A module hook for child processes (`node --import tsx --import <this file> …`) that appends the URL of every
// ES module the process loads to the file named by PAYHOOKS_TEST_LOAD_LOG, one a line: what test/helpers/module-loads.ts
// reads to tell which packages an entry pulls in. ESM has no module cache to inspect (require.cache holds
// CommonJS only), so the loads are observed where they happen. Loaded on the main thread, it registers itself;
// in the hooks thread, its `load` hook runs for each module, after tsx's hooks have resolved the sources.
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

let log;

/** Receives the log file's path from the register() call below. */
export function initialize(data) {
  log = data.log;
}

/** Records the module, then loads it as the next hook would. Synchronous, so the line is written before the import resolves. */
export async function load(url, context, nextLoad) {
  appendFileSync(log, `${url}\n`);
  return nextLoad(url, context);
}

if (isMainThread) {
  const file = process.env.PAYHOOKS_TEST_LOAD_LOG;
  if (!file) throw new Error('record-module-loads.mjs needs PAYHOOKS_TEST_LOAD_LOG, the file to write the loads to');
  register(import.meta.url, { data: { log: file } });
}
