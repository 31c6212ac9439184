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
      forward: [],
      brokers: [],
      connectors: [],
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

  it('reads forward targets, brokers and connectors, secrets from the environment, with their defaults', async () => {
    const dir = folder();
    process.env.PAYHOOKS_TEST_FORWARD_SECRET = 'whsec_from_env';
    process.env.PAYHOOKS_TEST_AMQP_URL = 'amqp://user:pw@127.0.0.1:5672';
    const connectorModule = new URL('../../src/sync/connector.ts', import.meta.url).href;
    writeFileSync(
      join(dir, 'payhooks.config.mjs'),
      `import { defineConnector } from ${JSON.stringify(connectorModule)};
       export default {
         forward: [
           { name: 'erp', url: 'https://erp.example.com/in', secret: { env: 'PAYHOOKS_TEST_FORWARD_SECRET' }, timeout: '3s', ratePerSecond: 5, eventTypes: ['INVOICE_PAID'] },
           { name: 'n8n', url: 'http://127.0.0.1:5678/webhook/x', secret: 'whsec_inline' },
         ],
         brokers: [
           { kind: 'rabbitmq', url: { env: 'PAYHOOKS_TEST_AMQP_URL' } },
           { kind: 'nats', name: 'events', servers: ['nats://127.0.0.1:4222'], duplicateWindow: '5m' },
         ],
         connectors: [defineConnector({ name: 'crm', events: ['CUSTOMER_CREATED'], handle() {} })],
       };`,
    );
    try {
      const config = await loadSyncConfig({ cwd: dir });
      expect(config.forward).toEqual([
        {
          name: 'erp',
          url: 'https://erp.example.com/in',
          secret: 'whsec_from_env',
          timeoutMs: 3000,
          concurrency: undefined,
          ratePerSecond: 5,
          eventTypes: ['INVOICE_PAID'],
          headers: undefined,
        },
        expect.objectContaining({ name: 'n8n', secret: 'whsec_inline', timeoutMs: undefined }),
      ]);
      expect(config.brokers).toEqual([
        {
          kind: 'rabbitmq',
          name: 'rabbitmq',
          url: 'amqp://user:pw@127.0.0.1:5672',
          exchange: undefined,
          queue: undefined,
          eventTypes: undefined,
        },
        expect.objectContaining({ kind: 'nats', name: 'events', servers: ['nats://127.0.0.1:4222'], duplicateWindowMs: 300_000 }),
      ]);
      expect(config.connectors.map((c) => c.name)).toEqual(['crm']);
    } finally {
      delete process.env.PAYHOOKS_TEST_FORWARD_SECRET;
      delete process.env.PAYHOOKS_TEST_AMQP_URL;
    }
  });

  it('refuses bad sinks with every reason: a bad URL, a missing secret, an unset variable, an unknown broker, a connector in JSON, a name used twice', async () => {
    const dir = folder();
    const path = join(dir, 'payhooks.config.json');
    writeFileSync(
      path,
      JSON.stringify({
        forward: [{ name: 'ERP', url: 'ftp://x', timeout: 'soon' }],
        brokers: [{ kind: 'kafka', url: 'x' }],
        connectors: [{ name: 'crm' }],
      }),
    );
    const message = String(await loadSyncConfig({ cwd: dir }).catch((err: unknown) => err));
    expect(message).toMatch(/- forward\.0\.name: expected 1 to 63 lower-case letters/);
    expect(message).toMatch(/- forward\.0\.url: expected an http:\/\/ or https:\/\/ URL/);
    expect(message).toMatch(/- forward\.0\.secret: /);
    expect(message).toMatch(/- forward\.0\.timeout: expected a duration such as 10s/);
    expect(message).toMatch(/- brokers\.0\.kind: /);
    expect(message).toMatch(
      /- connectors\.0: expected a connector made by defineConnector \(connectors need a \.js or \.mjs configuration file\)/,
    );

    writeFileSync(
      path,
      JSON.stringify({ forward: [{ name: 'erp', url: 'https://x.example', secret: { env: 'PAYHOOKS_TEST_UNSET_VARIABLE' } }] }),
    );
    await expect(loadSyncConfig({ cwd: dir })).rejects.toThrow(
      /- forward\.0\.secret: the environment variable PAYHOOKS_TEST_UNSET_VARIABLE is not set/,
    );

    writeFileSync(
      path,
      JSON.stringify({
        forward: [
          { name: 'erp', url: 'https://a.example', secret: 's' },
          { name: 'erp', url: 'https://b.example', secret: 's' },
        ],
      }),
    );
    await expect(loadSyncConfig({ cwd: dir })).rejects.toThrow(/used more than once: forward:erp/);
  });
});
