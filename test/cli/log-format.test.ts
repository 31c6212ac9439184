// Logs are readable lines on a terminal (pino-pretty) and JSON lines otherwise. The terminal is a real
// pseudo-terminal, made by util-linux's `script`.
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';

const run = promisify(execFile);
const SCRIPT = '/usr/bin/script';
const entry = fileURLToPath(new URL('../fixtures/cli.ts', import.meta.url));
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/** A port something already listens on, so that serve logs its start and then stops at once. */
async function takenPort(): Promise<{ port: number; close: () => void }> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, close: () => server.close() };
}

describe('log format', () => {
  it.skipIf(!existsSync(SCRIPT))('pretty on a terminal, JSON lines when piped', { timeout: 90_000 }, async () => {
    const taken = await takenPort();
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-logs-'));
    try {
      const env = { PAYHOOKS_WEBHOOK_SECRET: 'log-secret', PORT: String(taken.port), HOST: '127.0.0.1', DATABASE_URL: '' };
      const piped = await runCli(['serve'], env, dir);
      expect(piped.code).toBe(1);
      const pipedLines = piped.stdout.trim().split('\n');
      for (const line of pipedLines) expect(JSON.parse(line)).toMatchObject({ level: expect.any(Number), msg: expect.any(String) });

      const command = `node --import ${tsx} ${entry} serve`;
      const onTerminal = await run(SCRIPT, ['-qec', command, '/dev/null'], {
        cwd: dir,
        env: { ...process.env, ...env },
        timeout: 60_000,
      }).catch((err: { stdout: string; code: number }) => err);
      expect(onTerminal.stdout).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] \S*WARN\S*: \S*PAYHOOKS_API_KEY is not set/m);
      expect(onTerminal.stdout).toMatch(/\S*INFO\S*: \S*inbox ready/);
      expect(onTerminal.stdout).not.toMatch(/^\{"level"/m);
      expect(onTerminal.stdout).not.toContain('log-secret');
    } finally {
      taken.close();
    }
  });
});
