import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEnv } from '../../src/service/environment.js';
import { resolveServiceConfig } from '../../src/service/resolve-service-config.js';
import { mirrorRuns } from '../../src/service/start-service.js';
import { ConfigError, DURATION_RANGES, loadSyncConfig } from '../../src/sync/config.js';
import { runInProcess } from '../helpers/cli.js';

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
      sinks: [],
      worker: {},
      history: {},
      sweeper: undefined,
      alarms: undefined,
      database: { pooler: undefined },
      tracing: { exporter: undefined, trustIncomingContext: undefined },
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
        sinkz: [],
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
    expect(message).toMatch(/- \(the whole file\): Unrecognized key: "sinkz"/);
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

  it('stops serve before it opens anything, exit code 1, with the reason', async () => {
    const dir = folder();
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ mirror: 'yes' }));
    const env = { PAYHOOKS_WEBHOOK_SECRET: 's', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '', PAYHOOKS_DATA_DIR: undefined };
    const result = await runInProcess(['serve'], env, dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/payhooks\.config\.json is not valid:\n {2}- mirror: /);
    expect(readdirSync(dir)).toEqual(['payhooks.config.json']); // no database folder made
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

  it('checks the range of every duration: reconcile.every 1m to 24d, lookback 1m to 90d, forward timeout 1s to 10m, duplicateWindow 1s to 7d', async () => {
    const dir = folder();
    const path = join(dir, 'payhooks.config.json');
    const file = (every: string, lookback: string, timeout: string, duplicateWindow: string) =>
      JSON.stringify({
        reconcile: { every, lookback },
        forward: [{ name: 'erp', url: 'https://erp.example.com/in', secret: 's', timeout }],
        brokers: [{ kind: 'nats', servers: 'nats://127.0.0.1:4222', duplicateWindow }],
      });
    // 30d is past Node's 24.8-day timer limit (the interval fired every millisecond); 0s ran reconciles back to back.
    for (const [every, lookback, timeout, duplicateWindow] of [
      ['30d', '91d', '30d', '8d'],
      ['0s', '59s', '0s', '0s'],
    ] as const) {
      writeFileSync(path, file(every, lookback, timeout, duplicateWindow));
      const message = String(await loadSyncConfig({ cwd: dir }).catch((err: unknown) => err));
      expect(message).toContain(`- reconcile.every: "${every}" is out of range: reconcile.every must be between 1m and 24d`);
      expect(message).toContain(`- reconcile.lookback: "${lookback}" is out of range: reconcile.lookback must be between 1m and 90d`);
      expect(message).toContain(`- forward.0.timeout: "${timeout}" is out of range: forward.timeout must be between 1s and 10m`);
      expect(message).toContain(
        `- brokers.0.duplicateWindow: "${duplicateWindow}" is out of range: brokers.duplicateWindow must be between 1s and 7d`,
      );
    }
    writeFileSync(path, file('24d', '90d', '10m', '7d'));
    expect((await loadSyncConfig({ cwd: dir })).forward[0]?.timeoutMs).toBe(600_000);
    writeFileSync(path, file('1m', '1m', '1s', '1s'));
    expect((await loadSyncConfig({ cwd: dir })).reconcile).toMatchObject({ every: '1m', lookback: '1m' });
    // The ranges docs/configuration.md states.
    expect(DURATION_RANGES).toEqual({
      'reconcile.every': { minMs: 60_000, maxMs: 24 * 86_400_000 },
      'reconcile.lookback': { minMs: 60_000, maxMs: 90 * 86_400_000 },
      'forward.timeout': { minMs: 1000, maxMs: 600_000 },
      'brokers.duplicateWindow': { minMs: 1000, maxMs: 7 * 86_400_000 },
      'brokers.ackTimeout': { minMs: 1000, maxMs: 60_000 },
      'brokers.pingInterval': { minMs: 1000, maxMs: 60_000 },
    });
  });

  it("sets a NATS sink's acknowledgement wait and pings from the file, within their ranges", async () => {
    const dir = folder();
    const path = join(dir, 'payhooks.config.json');
    const nats = (settings: object) => JSON.stringify({ brokers: [{ kind: 'nats', servers: 'nats://127.0.0.1:4222', ...settings }] });
    writeFileSync(path, nats({ ackTimeout: '3s', pingInterval: '2s', maxPingOut: 3 }));
    expect((await loadSyncConfig({ cwd: dir })).brokers[0]).toMatchObject({ ackTimeoutMs: 3000, pingIntervalMs: 2000, maxPingOut: 3 });
    writeFileSync(path, nats({ ackTimeout: '2m', pingInterval: '0s', maxPingOut: 0 }));
    const message = String(await loadSyncConfig({ cwd: dir }).catch((err: unknown) => err));
    expect(message).toContain('- brokers.0.ackTimeout: "2m" is out of range: brokers.ackTimeout must be between 1s and 1m');
    expect(message).toContain('- brokers.0.pingInterval: "0s" is out of range: brokers.pingInterval must be between 1s and 1m');
    expect(message).toContain('- brokers.0.maxPingOut:');
  });

  it('takes a fractional ratePerSecond (0.5: one request every 2 s), and refuses a rate p-queue cannot keep', async () => {
    const dir = folder();
    const path = join(dir, 'payhooks.config.json');
    const withRate = (ratePerSecond: number) =>
      JSON.stringify({ forward: [{ name: 'erp', url: 'https://erp.example.com/in', secret: 's', ratePerSecond }] });
    writeFileSync(path, withRate(0.5));
    expect((await loadSyncConfig({ cwd: dir })).forward[0]?.ratePerSecond).toBe(0.5);
    for (const rate of [0, -1, 0.001, 20_000]) {
      writeFileSync(path, withRate(rate));
      await expect(loadSyncConfig({ cwd: dir })).rejects.toThrow(
        `- forward.0.ratePerSecond: must be between 0.01 (one request every 100 s) and 10000 requests a second, not ${rate}`,
      );
    }
  });

  it('refuses forward headers a request cannot carry and URLs with credentials, without repeating the secret', async () => {
    const dir = folder();
    const path = join(dir, 'payhooks.config.json');
    writeFileSync(
      path,
      JSON.stringify({
        forward: [
          {
            name: 'erp',
            url: 'https://erp:hunter2pw@erp.example.com/in',
            secret: 's',
            headers: {
              'x-api-key': 'key-hunter2\r\nx-injected: 1',
              'x bad': 'v',
              authorization: 'Bearer hunter2\u20ac',
              'X-Webhook-Signature': 'v1=mine',
              connection: 'close',
              'x-fine': 'ok',
            },
          },
        ],
      }),
    );
    const message = String(await loadSyncConfig({ cwd: dir }).catch((err: unknown) => err));
    expect(message).toMatch(
      /- forward\.0\.url: the URL holds credentials \(user:password@\), which an HTTP request cannot carry in its URL: give them as a header instead, e\.g\. headers: \{ authorization: "Basic …" \}/,
    );
    expect(message).toContain(
      '- forward.0.headers.x-api-key: its value holds a line break or another character a header cannot carry (value not shown)',
    );
    expect(message).toContain('- forward.0.headers.x bad: "x bad" is not a header name');
    expect(message).toContain('- forward.0.headers.authorization: its value holds a line break or another character');
    expect(message).toContain('- forward.0.headers.X-Webhook-Signature: set by payhooks on every forwarded request');
    expect(message).toContain('- forward.0.headers.connection: connection is set by the HTTP client itself and cannot be given');
    expect(message).not.toContain('x-fine');
    expect(message).not.toContain('hunter2');
  });

  it('gives up on a module whose top-level await does not settle, naming the file', { timeout: 30_000 }, async () => {
    const dir = folder();
    writeFileSync(join(dir, 'payhooks.config.mjs'), 'await new Promise(() => {});\nexport default { mirror: true };\n');
    const error = await loadSyncConfig({ cwd: dir, loadTimeoutMs: 300 }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      `payhooks: The configuration file ${join(dir, 'payhooks.config.mjs')} did not finish loading within 300ms: a top-level await in it ` +
        '(or in a module it imports) has not settled. Export the object itself, and connect to services in connectors, not while the file loads.',
    );
  });
});

describe('the worker key of the configuration file', () => {
  const load = async (worker: unknown) => {
    const dir = folder();
    const path = join(dir, 'payhooks.config.json');
    writeFileSync(path, JSON.stringify({ worker }));
    return loadSyncConfig({ cwd: dir }).catch((err: unknown) => err);
  };

  it("takes WORKER_DEFAULTS' names, durations in ms; unset keys are left to the defaults", async () => {
    const worker = {
      concurrency: 2,
      maxPrefetch: 0,
      maxAttempts: 3,
      handlerTimeoutMs: 5000,
      leaseMs: 20_000,
      pollIntervalMs: 250,
      backoff: { baseMs: 200, maxMs: 400 },
    };
    expect(((await load(worker)) as { worker: unknown }).worker).toEqual(worker);
    expect(((await load({ maxAttempts: 5 })) as { worker: unknown }).worker).toEqual({ maxAttempts: 5 });
  });

  it.each([
    [{ concurrency: 0 }, 'worker.concurrency: must be a whole number of at least 1, not 0.'],
    [{ maxAttempts: 2.5 }, 'worker.maxAttempts: must be a whole number of at least 1, not 2.5.'],
    [{ maxPrefetch: -1 }, 'worker.maxPrefetch: must be a whole number of at least 0, not -1.'],
    [{ handlerTimeoutMs: 0 }, 'worker.handlerTimeoutMs: must be a positive number of milliseconds, not 0.'],
    [{ pollIntervalMs: -5 }, 'worker.pollIntervalMs: must be a positive number of milliseconds, not -5.'],
    [
      { handlerTimeoutMs: 30_000, leaseMs: 30_000 },
      'worker.leaseMs: leaseMs (30000) must be longer than handlerTimeoutMs (30000), or another worker could take an event while its handler still runs.',
    ],
    [{ backoff: { baseMs: 0 } }, 'worker.backoff.baseMs: must be a positive number of milliseconds, not 0.'],
    [{ stopTimeoutMs: -1 }, 'worker.stopTimeoutMs: must be a positive number of milliseconds, not -1.'],
    [{ backoff: { baseMs: 1000, maxMs: 500 } }, 'worker.backoff.maxMs: (500) must not be shorter than baseMs (1000): it caps every delay.'],
    [{ concurrency: '4' }, 'worker.concurrency: Invalid input: expected number, received string'],
    [{ retries: 3 }, 'worker: Unrecognized key: "retries"'],
    [{ backoff: { base: 100 } }, 'worker.backoff: Unrecognized key: "base"'],
  ])('refuses %j, naming the key: %s', async (worker, line) => {
    const error = await load(worker);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toContain(`  - ${line}`);
  });

  it('serve: each variable overrides its key of the file, and is checked by the same rule', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-worker-env-'));
    writeFileSync(
      join(dir, 'payhooks.config.json'),
      JSON.stringify({ worker: { concurrency: 2, maxAttempts: 3, stopTimeoutMs: 20_000, backoff: { baseMs: 200 } } }),
    );
    const resolved = (env: Record<string, string>) =>
      resolveServiceConfig({ env: { PAYHOOKS_WEBHOOK_SECRET: 'whsec', ...env }, cwd: dir, simulatorSession: false });
    const defaults = { maxPrefetch: 1000, pollIntervalMs: 1000 };
    expect((await resolved({})).worker).toEqual({
      ...defaults,
      concurrency: 2,
      maxAttempts: 3,
      handlerTimeoutMs: 30_000,
      stopTimeoutMs: 20_000,
      backoff: { baseMs: 200, maxMs: 3_600_000 },
    });
    const env = {
      PAYHOOKS_WORKER_CONCURRENCY: '8',
      PAYHOOKS_MAX_ATTEMPTS: ' 5 ',
      PAYHOOKS_HANDLER_TIMEOUT_MS: '1500',
      PAYHOOKS_STOP_TIMEOUT_MS: '8000',
    };
    expect((await resolved(env)).worker).toEqual({
      ...defaults,
      concurrency: 8,
      maxAttempts: 5,
      handlerTimeoutMs: 1500,
      stopTimeoutMs: 8000,
      backoff: { baseMs: 200, maxMs: 3_600_000 },
    });
    expect((await resolved({ PAYHOOKS_MAX_ATTEMPTS: '' })).worker.maxAttempts).toBe(3);
    expect(() =>
      readEnv('serve', {
        PAYHOOKS_WORKER_CONCURRENCY: '0',
        PAYHOOKS_MAX_ATTEMPTS: 'ten',
        PAYHOOKS_HANDLER_TIMEOUT_MS: '-1',
        PAYHOOKS_STOP_TIMEOUT_MS: '0',
      }),
    ).toThrow(
      [
        'Invalid environment:',
        '  - PAYHOOKS_WORKER_CONCURRENCY must be a whole number of at least 1, not 0',
        '  - PAYHOOKS_MAX_ATTEMPTS must be a number, not "ten"',
        '  - PAYHOOKS_HANDLER_TIMEOUT_MS must be a number, not "-1"',
        '  - PAYHOOKS_STOP_TIMEOUT_MS must be a positive number of milliseconds, not 0',
      ].join('\n'),
    );
  });
});
