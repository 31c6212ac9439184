#!/usr/bin/env node
// The published entry: runs the compiled CLI (built by `npm run build`, which `npm install` runs via "prepare").
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const entry = new URL('../dist/cli/entry.js', import.meta.url);
if (existsSync(fileURLToPath(entry))) {
  // It runs the command and exits once stdout and stderr are flushed (a pipe's reader may be slower than the
  // command), and no later: a connection to a database that stopped answering must not keep the process alive.
  await import(entry.href);
} else {
  console.error('payhooks: the compiled CLI is missing (dist/). Run `npm run build` in the payhooks folder first.');
  // Not process.exit: that could cut the message short when stderr is a pipe.
  process.exitCode = 1;
}
