import { mkdtempSync, writeFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collect, runCli, spawnCli, waitForLog } from '../helpers/cli.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

// Each of these configuration files used to pass the check at start and then fail later, silently or at every
// request: serve must refuse them when it starts, exit 1, and say which key is wrong and why.

const SERVE_ENV = { PAYHOOKS_WEBHOOK_SECRET: 'whsec_sender', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '' };

/** A loopback port nothing listens on: one the system just gave and took back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((closed) => server.close(() => closed()));
  return port;
}

function folderWith(name: string, content: string): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-config-start-'));
  const path = join(dir, name);
  writeFileSync(path, content);
  return { dir, path };
}

// Concurrent: each case has a folder and a process of its own, and the first spends its 10 s waiting (serve's own
// limit), during which the others run.
describe.concurrent('payhooks serve refuses at start a configuration that could only fail later', () => {
  it('a module whose top-level await never settles: exit 1 naming the file after 10 s, not exit 13 without a word', {
    timeout: 90_000,
  }, async () => {
    const { dir, path } = folderWith('payhooks.config.mjs', 'await new Promise(() => {});\nexport default { mirror: true };\n');
    const result = await runCli(['serve'], SERVE_ENV, dir, 60_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`payhooks: The configuration file ${path} did not finish loading within 10s: a top-level await`);
  });

  it('a module with a syntax error: exit 1 naming the file, the line and the mistake, not only "Unexpected identifier"', {
    timeout: 90_000,
  }, async () => {
    const { dir, path } = folderWith(
      'payhooks.config.mjs',
      "export default {\n  mirror: { enabled: true },\n  forward: [{ name: 'erp' url: 'https://erp.example.com/in' }],\n};\n",
    );
    const result = await runCli(['serve'], SERVE_ENV, dir, 60_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `payhooks: The configuration file ${path} could not be loaded: Unexpected identifier 'url', at line 3:`,
    );
    expect(result.stderr).toContain("    forward: [{ name: 'erp' url: 'https://erp.example.com/in' }],");
  });

  it('a DATABASE_URL whose server does not answer: exit 1 naming DATABASE_URL (no password) and doctor, not a bare ECONNREFUSED', {
    timeout: 90_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-config-start-'));
    const port = await closedPort();
    const result = await runCli(
      ['serve'],
      { ...SERVE_ENV, DATABASE_URL: `postgres://app:hunter2secret@127.0.0.1:${port}/billing` },
      dir,
      60_000,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `payhooks: cannot use the PostgreSQL database of DATABASE_URL (postgres://app@127.0.0.1:${port}/billing): connect ECONNREFUSED 127.0.0.1:${port}. ` +
        "Check DATABASE_URL's host, port, user, password and database name; `payhooks doctor` checks them.",
    );
    expect(result.stdout + result.stderr).not.toContain('hunter2secret');
  });

  it('a forward URL with credentials: exit 1 naming the key, the password never printed', { timeout: 90_000 }, async () => {
    const { dir } = folderWith(
      'payhooks.config.json',
      JSON.stringify({ forward: [{ name: 'erp', url: 'https://erp:hunter2pw@erp.example.com/in', secret: 'whsec_target' }] }),
    );
    const result = await runCli(['serve'], SERVE_ENV, dir, 60_000);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/- forward\.0\.url: the URL holds credentials \(user:password@\).*give them as a header instead/);
    expect(result.stdout + result.stderr).not.toContain('hunter2pw');
  });

  it('a forward header with a line break, and a reconcile interval past the timer limit: exit 1 naming both', {
    timeout: 90_000,
  }, async () => {
    const { dir } = folderWith(
      'payhooks.config.json',
      JSON.stringify({
        reconcile: { every: '30d' },
        forward: [
          { name: 'erp', url: 'https://erp.example.com/in', secret: 'whsec_target', headers: { 'x-api-key': 'k-hunter2\r\nx: 1' } },
        ],
      }),
    );
    const result = await runCli(
      ['serve'],
      { ...SERVE_ENV, PAYHOOKS_API_KEY: 'sk_test_config_start', PAYHOOKS_API_URL: 'http://127.0.0.1:9' },
      dir,
      60_000,
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('- reconcile.every: "30d" is out of range: reconcile.every must be between 1m and 24d');
    expect(result.stderr).toContain('- forward.0.headers.x-api-key: its value holds a line break');
    expect(result.stdout + result.stderr).not.toContain('hunter2');
  });

  it('ratePerSecond 0.5 is a rate it keeps (one request every 2 s): serve starts; 0.001 is refused with the range', {
    timeout: 90_000,
  }, async () => {
    const withRate = (ratePerSecond: number) =>
      folderWith(
        'payhooks.config.json',
        JSON.stringify({
          mirror: false,
          forward: [{ name: 'erp', url: 'https://erp.example.com/in', secret: 'whsec_target', ratePerSecond }],
        }),
      ).dir;
    const refused = await runCli(['serve'], SERVE_ENV, withRate(0.001), 60_000);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      '- forward.0.ratePerSecond: must be between 0.01 (one request every 100 s) and 10000 requests a second, not 0.001',
    );

    const kept = withRate(0.5);
    // A migrated database already (its first start is not the subject): serve skips initdb and the migrations.
    seedDefaultDataDir(kept);
    const serve = spawnCli(['serve'], SERVE_ENV, kept);
    const done = collect(serve, 80_000);
    try {
      expect((await waitForLog(serve, /receiving webhooks/, 60_000)).url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/webhooks$/);
    } finally {
      serve.kill('SIGTERM');
    }
    const served = await done;
    expect(served.code).toBe(0);
    expect(served.stderr).not.toMatch(/intervalCap/);
  });
});
