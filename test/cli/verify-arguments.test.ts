// `payhooks verify`'s refusals of bad input, driven in-process through `run()` (runInProcess): they only parse and
// print, before anything is opened, so no process per case. test/cli/verify.test.ts keeps the spawned runs whose
// exit code, JSON on stdout or SIGINT is the point.
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runInProcess } from '../helpers/cli.js';

describe('payhooks verify: bad input', () => {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-verify-'));
  const dataDir = join(dir, 'pgdata');
  const env = { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir, PAYHOOKS_API_KEY: 'sk_test_cli', PAYHOOKS_API_URL: 'http://127.0.0.1:9' };

  it('an unknown --resource, a bad --since or --sample, no API key: exit 1 naming the value, nothing opened', async () => {
    // One after the other: runInProcess sets the environment and the working directory of this process for a run.
    const resource = await runInProcess(['verify', '--resource', 'customers,charges'], env, dir);
    const since = await runInProcess(['verify', '--since', 'yesterday'], env, dir);
    const sample = await runInProcess(['verify', '--sample', '0'], env, dir);
    const noKey = await runInProcess(['verify'], { ...env, PAYHOOKS_API_KEY: '' }, dir);
    for (const result of [resource, since, sample, noKey]) {
      expect(result.code).toBe(1);
      expect(result.stdout).toBe('');
    }
    expect(resource.stderr).toContain(
      '--resource "charges" cannot be verified: the known ones are customers, invoices, payments, refunds, disputes, subscriptions, payment_methods',
    );
    expect(since.stderr).toContain('"yesterday" is not one');
    expect(sample.stderr).toContain('--sample takes a whole number of records per resource from 1 to 10000, not "0"');
    expect(noKey.stderr).toContain("PAYHOOKS_API_KEY is not set: verify reads the service's API");
    expect(existsSync(dataDir)).toBe(false);
  });
});

describe('payhooks verify: what it says of the exit code after --repair', () => {
  it('--help and docs/cli.md say extra rows, which --repair leaves alone, keep the next verify at 3', async () => {
    const help = await runInProcess(['verify', '--help'], {}, mkdtempSync(join(tmpdir(), 'payhooks-verify-help-')));
    expect(help.code).toBe(0);
    const text = help.stdout.replace(/\s+/g, ' ');
    expect(text).toContain('After --repair the next verify exits 0 only if every drifted row was repaired and there were no extra rows');
    expect(text).toContain('so they keep it at 3 until they are checked and deleted by hand');
    const docs = readFileSync(new URL('../../docs/cli.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    expect(docs).toContain('The next `verify` exits 0 only when every drifted row was repaired and none was `extra`');
    expect(docs).not.toContain('so that a scheduled repair still tells someone; the next `verify` exits 0.');
  });
});
