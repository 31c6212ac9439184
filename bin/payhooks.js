#!/usr/bin/env node
// The published entry: runs the compiled CLI (built by `npm run build`, which `npm install` runs via "prepare").
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const main = new URL('../dist/cli/main.js', import.meta.url);
if (!existsSync(fileURLToPath(main))) {
  console.error('payhooks: the compiled CLI is missing (dist/). Run `npm run build` in the payhooks folder first.');
  process.exit(1);
}
const { run } = await import(main.href);
// Exit as soon as the command is done: a connection to a database that stopped answering must not keep the
// process alive after it gave up on a clean stop.
process.exit(await run(process.argv.slice(2)));
