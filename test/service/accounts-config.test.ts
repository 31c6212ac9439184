// The configuration file's accounts (docs/accounts.md#configuration): credentials only by reference, each problem
// named with its account, never a value.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkServiceConfig } from '../../src/service/resolve-service-config.js';

describe('accounts in the configuration file', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });
  const withFile = (config: unknown) => {
    dir = mkdtempSync(join(tmpdir(), 'payhooks-accounts-'));
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify(config));
    return dir;
  };

  it('reads secrets and keys from the environment and from files; no PAYHOOKS_WEBHOOK_SECRET needed', async () => {
    const cwd = withFile({
      accounts: [
        { id: 'north', secrets: { env: 'NORTH_SECRET' }, apiKey: { env: 'NORTH_KEY' } },
        { id: 'south', secrets: { file: 'south.secret' }, workerShare: 3 },
      ],
    });
    writeFileSync(join(cwd, 'south.secret'), 'whsec_south_new_0123456789,whsec_south_old_0123456789\n');
    const { config, problems } = await checkServiceConfig({
      cwd,
      env: { NORTH_SECRET: 'whsec_north_0123456789', NORTH_KEY: 'sk_north_0123456789', PAYHOOKS_API_URL: 'http://127.0.0.1:9' },
      simulatorSession: false,
    });
    expect(problems).toEqual([]);
    expect(config!.accounts).toEqual([
      { id: 'north', secrets: ['whsec_north_0123456789'], apiKey: 'sk_north_0123456789', apiUrl: 'http://127.0.0.1:9', workerShare: 1 },
      { id: 'south', secrets: ['whsec_south_new_0123456789', 'whsec_south_old_0123456789'], apiUrl: 'http://127.0.0.1:9', workerShare: 3 },
    ]);
  });

  it('names each unreadable credential with its account and never shows a value; a secret written out is refused', async () => {
    const cwd = withFile({
      accounts: [
        { id: 'north', secrets: { env: 'NORTH_SECRET' } },
        { id: 'south', secrets: { file: 'missing.secret' }, apiKey: { env: 'SOUTH_KEY' } },
      ],
    });
    const { config, problems } = await checkServiceConfig({ cwd, env: { SOUTH_KEY: 'sk_south_0123456789' }, simulatorSession: false });
    expect(config).toBeUndefined();
    const messages = problems.map((p) => p.message);
    expect(messages).toContain('accounts north secrets: the environment variable NORTH_SECRET is not set');
    expect(messages.some((m) => m.startsWith('accounts south secrets: the file') && m.includes('missing.secret'))).toBe(true);
    expect(messages).toContain('accounts south has an apiKey and no apiUrl: give its apiUrl, or set PAYHOOKS_API_URL.');
    expect(messages.join('\n')).not.toContain('sk_south_0123456789');

    const written = withFile({ accounts: [{ id: 'north', secrets: 'whsec_in_the_file_0123456789' }] });
    const refused = await checkServiceConfig({ cwd: written, env: {}, simulatorSession: false });
    expect(refused.config).toBeUndefined();
    expect(refused.problems.some((p) => p.key === 'config' && p.message.includes('accounts'))).toBe(true);
  });

  it('refuses a bad or repeated id; a worker reads no secrets', async () => {
    const bad = withFile({
      accounts: [
        { id: 'North', secrets: { env: 'X' } },
        { id: 'a', secrets: { env: 'X' } },
        { id: 'a', secrets: { env: 'X' } },
      ],
    });
    const { problems } = await checkServiceConfig({ cwd: bad, env: { X: 'whsec_0123456789abc' }, simulatorSession: false });
    expect(problems.map((p) => p.message).join('\n')).toMatch(/expected an account id[\s\S]*the account a is named twice/);
    rmSync(bad, { recursive: true, force: true });

    const cwd = withFile({ accounts: [{ id: 'north', secrets: { env: 'NORTH_SECRET' } }] });
    const worker = await checkServiceConfig({ cwd, env: {}, flags: { role: 'worker' }, simulatorSession: false });
    expect(worker.problems).toEqual([]);
    expect(worker.config!.accounts).toEqual([{ id: 'north', secrets: [], apiKey: undefined, apiUrl: undefined, workerShare: 1 }]);
  });
});
