import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveServiceConfig } from '../../src/service/resolve-service-config.js';
import { POOLED_POLL_INTERVAL_MS, WORKER_DEFAULTS } from '../../src/worker/defaults.js';
import { DEFAULT_APP_SCHEMA } from '../../src/store/migrate.js';
import { SERVICE_DEFAULTS } from '../../src/service/service-defaults.js';
import { ENV_COMMANDS, EnvironmentError, environmentHelp, readEnv, variablesOf } from '../../src/service/environment.js';
import { run } from '../../src/cli/main.js';
import { PayhooksError } from '../../src/errors.js';
import { LOGGER_DEFAULTS } from '../../src/logger.js';
import { DATABASE_DEFAULTS } from '../../src/store/database.js';

describe('the environment reader', () => {
  it('applies the components’ defaults, and counts a blank variable as unset', () => {
    expect(readEnv('serve', {})).toEqual({
      PAYHOOKS_WEBHOOK_SECRET: undefined,
      DATABASE_URL: undefined,
      PAYHOOKS_DATA_DIR: DATABASE_DEFAULTS.dataDir,
      PAYHOOKS_SCHEMA: DATABASE_DEFAULTS.schema,
      PAYHOOKS_APP_MIGRATIONS: undefined,
      PAYHOOKS_APP_SCHEMA: DEFAULT_APP_SCHEMA,
      PAYHOOKS_API_KEY: undefined,
      PAYHOOKS_API_URL: undefined,
      PORT: SERVICE_DEFAULTS.port,
      HOST: SERVICE_DEFAULTS.host,
      PAYHOOKS_LOG_LEVEL: LOGGER_DEFAULTS.level,
    });
    expect(readEnv('serve', { DATABASE_URL: '', PORT: ' ', PAYHOOKS_SCHEMA: '' })).toMatchObject({
      DATABASE_URL: undefined,
      PORT: SERVICE_DEFAULTS.port,
      PAYHOOKS_SCHEMA: DATABASE_DEFAULTS.schema,
    });
  });

  it('parses values: a secret list split at commas, a port as a number', () => {
    const env = readEnv('serve', { PAYHOOKS_WEBHOOK_SECRET: ' new , old,', PORT: '0', PAYHOOKS_API_URL: 'https://api.example/v1' });
    expect(env.PAYHOOKS_WEBHOOK_SECRET).toEqual(['new', 'old']);
    expect(env.PORT).toBe(0);
    expect(env.PAYHOOKS_API_URL).toBe('https://api.example/v1');
    expect(readEnv('trigger', { PAYHOOKS_WEBHOOK_SECRET: 'a,b' })).toEqual({ PAYHOOKS_WEBHOOK_SECRET: ['a', 'b'] });
  });

  it('throws one error that lists every bad variable by name, and never repeats a secret', () => {
    let error: unknown;
    try {
      readEnv('serve', {
        PORT: 'eighty',
        PAYHOOKS_SCHEMA: 'Payhooks-Prod',
        PAYHOOKS_API_URL: 'ftp://files.example',
        PAYHOOKS_LOG_LEVEL: 'loud',
        DATABASE_URL: 'postgres://u:hunter2@db/x',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(EnvironmentError);
    expect(error).toBeInstanceOf(PayhooksError);
    const { message, problems } = error as EnvironmentError;
    expect(problems).toHaveLength(4);
    expect(message).toMatch(/^payhooks: Invalid environment:\n/);
    expect(message).toContain('PORT must be a number from 0 to 65535 (0: any free port), not "eighty"');
    expect(message).toContain('PAYHOOKS_SCHEMA must be a schema name');
    expect(message).toContain('PAYHOOKS_API_URL must be an http or https URL, not "ftp://files.example"');
    expect(message).toContain('PAYHOOKS_LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, not "loud"');
    expect(message).not.toContain('hunter2');
  });

  it('checks only the variables the command reads', () => {
    expect(() => readEnv('migrate', { PORT: 'eighty' })).not.toThrow();
    expect(() => readEnv('migrate', { PAYHOOKS_SCHEMA: 'Bad' })).toThrow(/PAYHOOKS_SCHEMA/);
    expect(readEnv('simulate', {})).toEqual({ PAYHOOKS_LOG_LEVEL: LOGGER_DEFAULTS.level });
  });

  it('says which variables each command reads', () => {
    const database = ['DATABASE_URL', 'PAYHOOKS_DATA_DIR', 'PAYHOOKS_SCHEMA', 'PAYHOOKS_DATABASE_POOLER'];
    const app = ['PAYHOOKS_APP_MIGRATIONS', 'PAYHOOKS_APP_SCHEMA'];
    const sync = ['PAYHOOKS_API_KEY', 'PAYHOOKS_API_URL', 'PAYHOOKS_CONFIG', 'PAYHOOKS_MIRROR_SCHEMA'];
    expect(variablesOf('serve')).toHaveLength(26);
    expect(variablesOf('migrate')).toEqual([...database, ...app]);
    for (const command of ['backfill', 'reconcile'] as const)
      expect(variablesOf(command)).toEqual([...database, ...sync, 'PAYHOOKS_LOG_LEVEL']);
    for (const command of ['events', 'issues', 'replay', 'prune'] as const) expect(variablesOf(command)).toEqual(database);
    expect(variablesOf('trigger')).toEqual(['PAYHOOKS_WEBHOOK_SECRET', 'PAYHOOKS_API_KEY', 'PAYHOOKS_API_URL']);
    expect(variablesOf('simulate')).toEqual(['PAYHOOKS_LOG_LEVEL']);
  });
});

describe('help and version', () => {
  async function output(argv: string[]): Promise<{ code: number; text: string }> {
    const lines: string[] = [];
    const code = await run(argv, (text) => lines.push(text));
    return { code, text: lines.join('\n') };
  }

  it.each([
    [['serve'], 'serve'],
    [['migrate'], 'migrate'],
    [['events', 'list'], 'events'],
    [['events', 'show'], 'events'],
    [['events', 'stats'], 'events'],
    [['issues', 'list'], 'issues'],
    [['issues', 'replay'], 'issues'],
    [['replay'], 'replay'],
    [['prune'], 'prune'],
    [['backfill'], 'backfill'],
    [['reconcile'], 'reconcile'],
    [['trigger'], 'trigger'],
    [['simulate'], 'simulate'],
    // They open the inbox as events does.
    [['quarantine', 'list'], 'events'],
    [['effects', 'list'], 'events'],
  ] as const)('payhooks %j --help lists exactly the variables it reads, with their defaults', async (argv, command) => {
    const { code, text } = await output([...argv, '--help']);
    expect(code).toBe(0);
    expect(text).toContain(environmentHelp(command));
    const section = text.slice(text.indexOf('\nEnvironment:'));
    const listed = [...section.matchAll(/^ {2}([A-Z_]+) {2}/gm)].map((m) => m[1]);
    expect(listed).toEqual(variablesOf(command));
    if (listed.includes('PAYHOOKS_DATA_DIR')) expect(section).toContain(`(default ${DATABASE_DEFAULTS.dataDir})`);
  });

  it('the top-level --help lists every variable and the commands that read it', async () => {
    const { text } = await output(['--help']);
    for (const command of ENV_COMMANDS) expect(text).toContain(command);
    expect(text).toMatch(/PORT +port serve listens on.*\(default 8787\) \[serve\]/);
    expect(text).toMatch(/PAYHOOKS_WEBHOOK_SECRET .*\[serve, trigger, send\]/);
    expect(text).toMatch(/DATABASE_URL .*\[serve, migrate, events, issues, replay,/);
  });

  it('--version prints the version in package.json', async () => {
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    expect(await output(['--version'])).toEqual({ code: 0, text: version });
  });
});

describe('PAYHOOKS_DATABASE_POOLER', () => {
  it('takes none or transaction and refuses anything else, naming the variable', () => {
    expect(readEnv('replay', { PAYHOOKS_DATABASE_POOLER: 'transaction' }).PAYHOOKS_DATABASE_POOLER).toBe('transaction');
    expect(readEnv('replay', {}).PAYHOOKS_DATABASE_POOLER).toBeUndefined();
    expect(() => readEnv('serve', { PAYHOOKS_DATABASE_POOLER: 'session' })).toThrow(
      /PAYHOOKS_DATABASE_POOLER must be "none" or "transaction", not "session"/,
    );
  });

  it("makes serve's configuration say transaction, with the worker's shorter poll interval unless one is set", async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'payhooks-pooler-'));
    try {
      const sources = (env: Record<string, string>) => ({
        env: { DATABASE_URL: 'postgres://u@127.0.0.1:6432/app', ...env },
        flags: { role: 'worker' as const },
        cwd,
        simulatorSession: false as const,
      });
      const pooled = await resolveServiceConfig(sources({ PAYHOOKS_DATABASE_POOLER: 'transaction' }));
      expect(pooled.database.pooler).toBe('transaction');
      expect(pooled.worker.pollIntervalMs).toBe(POOLED_POLL_INTERVAL_MS);
      const direct = await resolveServiceConfig(sources({}));
      expect(direct.database.pooler).toBe('none');
      expect(direct.worker.pollIntervalMs).toBe(WORKER_DEFAULTS.pollIntervalMs);
    } finally {
      rmSync(cwd, { recursive: true, force: true });
    }
  });
});
