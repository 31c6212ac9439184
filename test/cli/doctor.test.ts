import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { writeSimulatorSession } from '../../src/service/simulator-session.js';
import { startSimulator } from '../../src/simulator/index.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate, readMigrations } from '../../src/store/migrate.js';
import { collect, runCli, runInProcess, spawnCli, waitForLog, type CliResult } from '../helpers/cli.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { freePort } from '../helpers/servers.js';

interface Check {
  check: string;
  status: 'ok' | 'warn' | 'fail';
  summary: string;
  fix?: string;
}

// Every variable doctor looks at, blank (which counts as unset), so the machine's own environment never leaks in.
const UNSET = {
  DATABASE_URL: '',
  PAYHOOKS_DATA_DIR: '',
  PAYHOOKS_SCHEMA: '',
  PAYHOOKS_WEBHOOK_SECRET: '',
  PAYHOOKS_API_KEY: '',
  PAYHOOKS_API_URL: '',
  PAYHOOKS_ADMIN_TOKEN: '',
  PAYHOOKS_CONFIG: '',
  PAYHOOKS_MIRROR_SCHEMA: '',
  PAYHOOKS_APP_MIGRATIONS: '',
  PAYHOOKS_APP_SCHEMA: '',
  PORT: '',
  HOST: '',
  OTEL_TRACES_EXPORTER: '',
  OTEL_EXPORTER_OTLP_ENDPOINT: '',
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '',
  OTEL_SDK_DISABLED: '',
};

const freshDir = () => mkdtempSync(join(tmpdir(), 'payhooks-doctor-'));

async function doctor(env: Record<string, string>, dir: string, args: string[] = []): Promise<CliResult & { checks: Check[] }> {
  // In this process, through the CLI's run(): its exit code is the process's (the text report below is a process).
  const result = await runInProcess(['doctor', '--json', ...args], { ...UNSET, ...env }, dir);
  let checks: Check[] = [];
  try {
    checks = (JSON.parse(result.stdout) as { checks: Check[] }).checks;
  } catch {
    throw new Error(`doctor printed no JSON (exit ${result.code}):\n${result.stdout}\n${result.stderr}`);
  }
  return { ...result, checks };
}

function byName(checks: Check[]): Record<string, Check> {
  return Object.fromEntries(checks.map((check) => [check.check, check]));
}

function statuses(checks: Check[]): Record<string, string> {
  return Object.fromEntries(checks.map((check) => [check.check, check.status]));
}

const migrationCount = readMigrations().length;

describe('payhooks doctor on an embedded database', () => {
  it('in an empty folder: all ok but the unset secret and key, exit 1 for the secret, and nothing is created', {
    timeout: 60_000,
  }, async () => {
    const dir = freshDir();
    const bare = await doctor({}, dir);
    expect(bare.code).toBe(1);
    expect(statuses(bare.checks)).toEqual({
      environment: 'ok',
      database: 'ok',
      migrations: 'warn',
      'webhook-secret': 'fail',
      'api-key': 'warn',
      console: 'ok',
      config: 'ok',
      tracing: 'ok',
    });
    const checks = byName(bare.checks);
    expect(checks.database?.summary).toMatch(/embedded \(PGlite\) at \.payhooks\/pgdata: not created yet/);
    expect(checks.migrations?.summary).toContain(`all ${migrationCount} are pending`);
    expect(checks['webhook-secret']?.summary).toMatch(/PAYHOOKS_WEBHOOK_SECRET is not set and there is no simulator session/);
    expect(checks['webhook-secret']?.fix).toMatch(/payhooks simulate --forward-to URL/);
    expect(checks.console?.summary).toMatch(/^off/);

    // The text report: one marked line per check, the fix after the arrow; a worker needs no secret, so only
    // warnings are left and the exit code is 0.
    const text = await runCli(['doctor', '--role', 'worker'], UNSET, dir, 30_000);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines.slice(0, 7).map((line) => line.split(/\s+/, 2).join(' '))).toEqual([
      'ok environment',
      'ok database',
      'warn migrations',
      'ok webhook-secret',
      'warn api-key',
      'ok console',
      'ok config',
    ]);
    expect(lines).toContain('ok    webhook-secret  PAYHOOKS_WEBHOOK_SECRET is not set (serve --role worker needs none)');
    expect(lines.find((line) => line.startsWith('warn  migrations'))).toContain('→ run payhooks migrate');
    expect(lines.at(-1)).toBe('no problems, 2 warnings');

    // Read-only: no database, lock file or session appeared.
    expect(readdirSync(dir)).toEqual([]);
  });

  it('says whether tracing is on, and that the SDK packages load when it is (docs/tracing.md)', { timeout: 60_000 }, async () => {
    const dir = freshDir();
    const off = byName((await doctor({}, dir)).checks).tracing;
    expect(off).toMatchObject({ status: 'ok', summary: expect.stringMatching(/^off/) });
    const on = byName((await doctor({ OTEL_TRACES_EXPORTER: 'otlp,console' }, dir)).checks).tracing;
    expect(on).toEqual({
      check: 'tracing',
      status: 'ok',
      summary: 'on: spans to otlp and console; the OpenTelemetry SDK packages load',
    });
    const refused = await doctor({ OTEL_TRACES_EXPORTER: 'zipkin' }, dir);
    expect(byName(refused.checks).tracing).toMatchObject({
      status: 'fail',
      summary: 'OTEL_TRACES_EXPORTER must name otlp, console or none (comma-separated), not "zipkin"',
    });
    expect(refused.code).toBe(1);
  });

  it('reports an embedded database held by a running serve as in use by its process, then checks it once serve stopped', {
    timeout: 90_000,
  }, async () => {
    const dir = freshDir();
    const env = { PAYHOOKS_WEBHOOK_SECRET: 'doctor-serve-secret' };
    const serve = spawnCli(['serve'], { ...UNSET, ...env, PORT: '0', HOST: '127.0.0.1' }, dir);
    const served = collect(serve, 80_000);
    try {
      const port = new URL(String((await waitForLog(serve, /receiving webhooks/)).url)).port;
      const busy = await doctor(env, dir);
      // In use is not a broken setup: a warning, and the other checks still run.
      expect(busy.code).toBe(0);
      const database = byName(busy.checks).database;
      expect(database?.status).toBe('warn');
      expect(database?.summary).toContain(
        `is in use by process ${serve.pid} (a running serve?); serve answers at http://127.0.0.1:${port} (/readyz ready)`,
      );
      expect(database?.summary).toContain('the migrations were not checked');
      expect(byName(busy.checks).migrations).toBeUndefined();
      expect(byName(busy.checks)['webhook-secret']?.status).toBe('ok');
    } finally {
      serve.kill('SIGTERM');
    }
    expect((await served).code).toBe(0);

    const after = await doctor(env, dir);
    expect(after.code).toBe(0);
    expect(byName(after.checks).database).toMatchObject({ status: 'ok', summary: 'embedded (PGlite) at .payhooks/pgdata' });
    expect(byName(after.checks).migrations?.status).toBe('ok');
    expect(byName(after.checks).migrations?.summary).toContain(`all ${migrationCount} applied`);
  });

  it('fails a secret list with no secret, a key not of the sk_test_/sk_live_ form, a weak console token, a broken configuration file and an unreachable database, and prints none of the secrets', {
    timeout: 60_000,
  }, async () => {
    const dir = freshDir();
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ forward: [{ name: 'erp', secret: 'forward-secret-value' }] }));
    const port = await freePort();
    const secrets = {
      PAYHOOKS_WEBHOOK_SECRET: ' , ',
      PAYHOOKS_API_KEY: 'pk_live_doctorLeakCheck42',
      PAYHOOKS_API_URL: `http://127.0.0.1:${port}`,
      PAYHOOKS_ADMIN_TOKEN: 'z'.repeat(40),
      DATABASE_URL: `postgres://doctor:hunter2-doctor@127.0.0.1:${port}/nothing`,
    };
    const result = await doctor(secrets, dir);
    expect(result.code).toBe(1);
    const checks = byName(result.checks);
    expect(statuses(result.checks)).toEqual({
      environment: 'ok',
      database: 'fail',
      'webhook-secret': 'fail',
      'api-key': 'fail',
      console: 'fail',
      config: 'fail',
      tracing: 'ok',
    });
    expect(checks.database?.summary).toMatch(
      new RegExp(`^PostgreSQL at postgres://doctor@127\\.0\\.0\\.1:${port}/nothing cannot be used: .*ECONNREFUSED`),
    );
    expect(checks['webhook-secret']?.summary).toMatch(/holds no secret \(only commas and spaces\)/);
    // Refused as serve refuses it (resolveServiceConfig, by the API client's rule), in the same words.
    expect(checks['api-key']?.summary).toMatch(
      /^PAYHOOKS_API_KEY is refused by the API client: apiKey must be a secret key starting with sk_/,
    );
    // The client refuses to send a pk_ key at all, so no API line follows the key's.
    expect(checks.api).toBeUndefined();
    expect(checks.console?.summary).toMatch(/PAYHOOKS_ADMIN_TOKEN is too weak: it repeats a few characters/);
    expect(checks.config?.summary).toMatch(/payhooks\.config\.json is not valid.*forward\.0\.url/);

    const text = await runCli(['doctor'], { ...UNSET, ...secrets }, dir, 30_000);
    expect(text.code).toBe(1);
    expect(text.stdout).toMatch(
      /^FAIL {2}webhook-secret {2}PAYHOOKS_WEBHOOK_SECRET holds no secret.* → set it to the endpoint's signing secret/m,
    );
    expect(text.stdout.trim().split('\n').at(-1)).toBe('5 problems to fix (FAIL), 0 warnings');
    for (const output of [result.stdout, result.stderr, text.stdout, text.stderr]) {
      for (const secret of ['hunter2-doctor', 'doctorLeakCheck42', 'z'.repeat(32), 'forward-secret-value'])
        expect(output).not.toContain(secret);
    }
  });
});

describe('payhooks doctor and the API', () => {
  it('checks the key against the API: accepted by a running simulator, refused (401), and no answer from a closed port', {
    timeout: 60_000,
  }, async () => {
    const simulator = await startSimulator();
    try {
      const dir = freshDir();
      const closed = `http://127.0.0.1:${await freePort()}`;
      const base = { PAYHOOKS_WEBHOOK_SECRET: 'doctor-api-secret' };
      // One after the other: each sets this process's environment while it runs.
      const answers = await doctor({ ...base, PAYHOOKS_API_KEY: 'sk_test_doctorAccepted7', PAYHOOKS_API_URL: simulator.url }, dir);
      const refused = await doctor({ ...base, PAYHOOKS_API_KEY: 'sk_demo_doctorRefused7', PAYHOOKS_API_URL: simulator.url }, dir);
      const unreachable = await doctor({ ...base, PAYHOOKS_API_KEY: 'sk_live_doctorNowhere7', PAYHOOKS_API_URL: closed }, dir);

      expect(answers.code).toBe(0);
      expect(byName(answers.checks)['api-key']).toMatchObject({ status: 'ok', summary: 'sk_test_… (staging) from PAYHOOKS_API_KEY' });
      expect(byName(answers.checks).api?.status).toBe('ok');
      expect(byName(answers.checks).api?.summary).toMatch(
        new RegExp(`^${simulator.url} answers and accepts sk_test_… \\(GET /v1/invoices in \\d+ ms\\)$`),
      );

      // serve starts with an sk_ key of another form (a warning); the simulator, like the service, answers it 401.
      expect(refused.code).toBe(1);
      expect(byName(refused.checks)['api-key']?.status).toBe('warn');
      expect(byName(refused.checks).api).toMatchObject({
        status: 'fail',
        summary: `${simulator.url} refused the key (401): the key is wrong, revoked, or of the other environment`,
      });

      expect(unreachable.code).toBe(1);
      expect(byName(unreachable.checks)['api-key']).toMatchObject({
        status: 'ok',
        summary: 'sk_live_… (production) from PAYHOOKS_API_KEY',
      });
      expect(byName(unreachable.checks).api?.status).toBe('fail');
      expect(byName(unreachable.checks).api?.summary).toMatch(new RegExp(`^nothing answers at ${closed}: .*could not reach the service`));

      for (const { stdout, stderr } of [answers, refused, unreachable]) {
        for (const key of ['doctorAccepted7', 'doctorRefused7', 'doctorNowhere7', 'doctor-api-secret'])
          expect(stdout + stderr).not.toContain(key);
      }
    } finally {
      await simulator.close();
    }
  });

  it('takes the secret and the API from a live simulator session as serve would, and fails a stale one', { timeout: 60_000 }, async () => {
    const simulator = await startSimulator();
    const dir = freshDir();
    let secret: string;
    try {
      const api = createClient({ apiKey: 'sk_test_doctorSession9', environment: simulator.url });
      const endpoint = await api.webhooks.create({
        url: 'http://127.0.0.1:8787/webhooks',
        description: 'doctor',
        enabledEvents: ['INVOICE_PAID'],
      });
      secret = (await api.webhooks.getSecret(endpoint.id)).secret;
      await writeSimulatorSession(join(dir, '.payhooks'), {
        version: 1,
        url: simulator.url,
        apiKey: 'sk_test_doctorSession9',
        endpointId: endpoint.id,
        secret,
        forwardTo: 'http://127.0.0.1:8787/webhooks',
        enabledEvents: ['INVOICE_PAID'],
        pid: process.pid,
        startedAt: new Date().toISOString(),
      });
      const live = await doctor({}, dir);
      expect(live.code).toBe(0);
      const checks = byName(live.checks);
      expect(checks['webhook-secret']).toMatchObject({
        status: 'ok',
        summary: `from the simulator session in .payhooks/simulator.json: endpoint ${endpoint.id} of ${simulator.url}`,
      });
      expect(checks['api-key']).toMatchObject({
        status: 'ok',
        summary: 'sk_test_… (staging) from the simulator session (.payhooks/simulator.json)',
      });
      expect(checks.api?.status).toBe('ok');
      expect(live.stdout).not.toContain(secret);
      expect(live.stdout).not.toContain('doctorSession9');
    } finally {
      await simulator.close();
    }

    const stale = await doctor({}, dir);
    expect(stale.code).toBe(1);
    expect(byName(stale.checks)['webhook-secret']).toMatchObject({ status: 'fail' });
    expect(byName(stale.checks)['webhook-secret']?.summary).toMatch(
      /the simulator session in \.payhooks\/simulator\.json is stale: .*does not answer/,
    );
    expect(stale.stdout).not.toContain(secret);
  });
});

describe.skipIf(!pgUrl)('payhooks doctor on the real PostgreSQL server', () => {
  it('reports a fresh schema as pending without creating it, then the rest pending, then a schema migrated by a newer payhooks', {
    timeout: 90_000,
  }, async () => {
    const schema = uniqueSchema('doctor');
    const dir = freshDir();
    const env = { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema, PAYHOOKS_WEBHOOK_SECRET: 'doctor-pg-secret' };
    const files = readMigrations();
    const store = await openDatabase({ url: pgUrl!, schema });
    try {
      const fresh = await doctor(env, dir);
      expect(fresh.code).toBe(0);
      expect(byName(fresh.checks).database?.summary).toMatch(/^PostgreSQL at postgres:\/\/\S+ answers$/);
      expect(byName(fresh.checks).migrations).toMatchObject({
        status: 'warn',
        summary: `schema ${schema} has none of the ${files.length} migrations applied yet`,
      });
      const { rows } = await sql<{
        n: number;
      }>`select count(*)::int as n from information_schema.schemata where schema_name = ${schema}`.execute(store.db);
      expect(rows[0]?.n).toBe(0);

      await migrate(store, files.slice(0, 2));
      const partly = await doctor(env, dir);
      expect(partly.code).toBe(0);
      expect(byName(partly.checks).migrations?.summary).toBe(
        `schema ${schema}: ${files.length - 2} of ${files.length} pending (${files
          .slice(2)
          .map((file) => file.name)
          .join(', ')})`,
      );

      await migrate(store);
      await sql`insert into ${sql.id(schema, 'schema_migrations')} (name, checksum) values ('999_from_the_future.sql', 'x')`.execute(
        store.db,
      );
      const newer = await doctor(env, dir);
      expect(newer.code).toBe(1);
      expect(byName(newer.checks).migrations).toMatchObject({
        status: 'fail',
        fix: 'upgrade payhooks, or point PAYHOOKS_SCHEMA at another schema',
      });
      expect(byName(newer.checks).migrations?.summary).toContain('was migrated by a newer payhooks: it records 999_from_the_future.sql');
    } finally {
      await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
      await store.close();
    }
  });
});
