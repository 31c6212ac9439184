// `payhooks reconcile`'s refusals of bad input, driven in-process through `run()` (runInProcess): they only parse
// and print, before anything is opened, so no process per case. test/sync/reconcile.test.ts keeps the spawned runs.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runInProcess } from '../helpers/cli.js';

describe('payhooks reconcile on the command line', () => {
  it('needs an API key, and refuses a --since it cannot read, before opening anything', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-reconcile-'));
    const noKey = await runInProcess(['reconcile'], { DATABASE_URL: '', PAYHOOKS_API_KEY: '' }, dir);
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toMatch(/PAYHOOKS_API_KEY is not set: reconcile reads the service's delivery history/);
    const badSince = await runInProcess(['reconcile', '--since', 'last tuesday'], { DATABASE_URL: '', PAYHOOKS_API_KEY: 'sk_test_x' }, dir);
    expect(badSince.code).toBe(1);
    expect(badSince.stderr).toMatch(/--since takes a date such as 2025-01-31/);
  });
});
