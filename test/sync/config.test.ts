import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mirrorRuns } from '../../src/cli/service.js';
import { ConfigError, loadSyncConfig } from '../../src/sync/config.js';
import { runCli } from '../helpers/cli.js';

const folder = () => mkdtempSync(join(tmpdir(), 'payhooks-config-'));

describe('the sync configuration file', () => {
  it('is optional: without one every default applies, and the mirror runs only for serve without handlers', async () => {
    const config = await loadSyncConfig({ cwd: folder() });
    expect(config).toEqual({
      path: null,
      mirror: { enabled: undefined, schema: 'payhooks_mirror', eventTypes: undefined },
      reconcile: { every: undefined, lookback: '5d', endpointId: undefined },
    });
    expect(mirrorRuns(config, false)).toBe(true);
    expect(mirrorRuns(config, true)).toBe(false);
  });

  it('is found in the working directory (.js before .mjs before .json) and read as a module or as JSON', async () => {
    const dir = folder();
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ mirror: { schema: 'from_json' } }));
    expect((await loadSyncConfig({ cwd: dir })).mirror).toEqual({ enabled: true, schema: 'from_json', eventTypes: undefined });
    writeFileSync(
      join(dir, 'payhooks.config.mjs'),
      "export default { mirror: { schema: 'from_mjs', eventTypes: ['INVOICE_PAID'] }, reconcile: { every: '1h' } };",
    );
    const config = await loadSyncConfig({ cwd: dir });
    expect(config.path).toBe(join(dir, 'payhooks.config.mjs'));
    expect(config.mirror).toEqual({ enabled: true, schema: 'from_mjs', eventTypes: ['INVOICE_PAID'] });
    expect(config.reconcile.every).toBe('1h');
    // PAYHOOKS_MIRROR_SCHEMA wins over the file; `mirror: true` turns it on even beside handlers.
    expect((await loadSyncConfig({ cwd: dir, mirrorSchema: 'from_env' })).mirror.schema).toBe('from_env');
    writeFileSync(join(dir, 'payhooks.config.js'), 'export default { mirror: true };');
    expect(mirrorRuns(await loadSyncConfig({ cwd: dir }), true)).toBe(true);
  });

  it('names every bad key and what was expected', async () => {
    const dir = folder();
    const path = join(dir, 'payhooks.config.json');
    writeFileSync(
      path,
      JSON.stringify({
        mirror: { schema: 'Bad Schema', eventTypes: ['INVOICE_PAYED'] },
        reconcile: { evry: '1h', lookback: 'soon' },
        sinks: [],
      }),
    );
    const error = await loadSyncConfig({ cwd: dir }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toContain(`The configuration file ${path} is not valid:`);
    expect(message).toMatch(/- mirror\.schema: expected a schema name/);
    expect(message).toMatch(/- mirror\.eventTypes\.0: "INVOICE_PAYED" is not an event type/);
    expect(message).toMatch(/- reconcile: Unrecognized key: "evry"/);
    expect(message).toMatch(/- reconcile\.lookback: expected a duration such as 5d/);
    expect(message).toMatch(/- \(the whole file\): Unrecognized key: "sinks"/);
  });

  it('refuses a missing PAYHOOKS_CONFIG file, a file of another kind, broken JSON and a module that throws', async () => {
    const dir = folder();
    await expect(loadSyncConfig({ cwd: dir, explicitPath: 'nope.json' })).rejects.toThrow(/nope\.json \(PAYHOOKS_CONFIG\) does not exist/);
    writeFileSync(join(dir, 'config.yaml'), 'mirror: true');
    await expect(loadSyncConfig({ cwd: dir, explicitPath: 'config.yaml' })).rejects.toThrow(/must end in \.js, \.mjs or \.json/);
    writeFileSync(join(dir, 'payhooks.config.json'), '{ "mirror": ');
    await expect(loadSyncConfig({ cwd: dir })).rejects.toThrow(/could not be read as JSON/);
    writeFileSync(join(dir, 'broken.mjs'), "throw new Error('boom');");
    await expect(loadSyncConfig({ cwd: dir, explicitPath: 'broken.mjs' })).rejects.toThrow(/broken\.mjs could not be loaded: boom/);
  });

  it('stops serve before it opens anything, exit code 1, with the reason', { timeout: 60_000 }, async () => {
    const dir = folder();
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ mirror: 'yes' }));
    const result = await runCli(['serve'], { PAYHOOKS_WEBHOOK_SECRET: 's', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '' }, dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/payhooks\.config\.json is not valid:\n {2}- mirror: /);
  });
});
