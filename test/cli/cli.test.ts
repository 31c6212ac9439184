import { dispose } from '../helpers/stores.js';
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { readMigrations } from '../../src/store/migrate.js';
import { collect, runCli, spawnCli, waitForLog } from '../helpers/cli.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { seedDataDir } from '../helpers/pglite-template.js';

const run = promisify(execFile);

describe("a newcomer's path on the embedded database", () => {
  it('serve starts with the mirror, a delivery signed with openssl and sent with curl is stored and mirrored, and events list shows it done', {
    // Took 57 s of its former 90 on a machine at load 25: room for one 3-4 times slower than an idle one.
    timeout: 240_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-newcomer-'));
    const env = {
      PAYHOOKS_WEBHOOK_SECRET: 'my-endpoint-secret',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: '',
      PAYHOOKS_LOG_LEVEL: 'debug',
    };
    const serve = spawnCli(['serve'], env, dir);
    const done = collect(serve, 220_000);
    try {
      // Listened for from the start: a line is only seen by listeners attached before it is printed.
      const [running, ready] = [waitForLog(serve, /^running: /, 120_000), waitForLog(serve, /receiving webhooks/, 120_000)];
      const mirrored = waitForLog(serve, /^mirrored$/, 150_000);
      expect((await running).msg).toBe(
        "running: the Postgres mirror in schema payhooks_mirror (events' own snapshots); 4 at once, up to 10 attempts each",
      );
      const url = String((await ready).url);

      // The README's snippet, as a user would type it.
      const script = `
        SECRET=my-endpoint-secret
        BODY='{"eventId":"evt_curl_1","eventType":"CUSTOMER_CREATED","data":{"id":"cus_1","name":null,"email":null,"phoneNumber":null,"username":"ada","metadata":[],"meta":{}}}'
        TS=$(date +%s)
        SIG=$(printf '%s.%s' "$TS" "$BODY" | openssl dgst -sha256 -hmac "$SECRET" | sed 's/^.* //')
        curl -s "$URL" -H 'content-type: application/json' -H "x-webhook-timestamp: $TS" -H "x-webhook-signature: v1=$SIG" -d "$BODY"
        echo
        curl -s "$URL" -H 'content-type: application/json' -H "x-webhook-timestamp: $TS" -H "x-webhook-signature: v1=$SIG" -d "$BODY"
        echo
        curl -s "$URL" -H 'content-type: application/json' -H "x-webhook-timestamp: $TS" -H "x-webhook-signature: v1=00" -d "$BODY"`;
      const { stdout } = await run('bash', ['-c', script], { env: { ...process.env, URL: url } });
      expect(stdout.trim().split('\n')).toEqual([
        '{"received":true}',
        '{"received":true,"duplicate":true}',
        '{"error":{"message":"Invalid webhook signature."}}',
      ]);

      expect(await mirrored).toMatchObject({ eventId: 'evt_curl_1', written: 1, reads: 0 });
      // The embedded database is serve's alone: events list asks serve; migrate waits for it to stop.
      const beside = await runCli(['events', 'list'], {}, dir);
      expect(beside.code, beside.stderr).toBe(0);
      expect(beside.stdout).toMatch(/evt_curl_1 +CUSTOMER_CREATED +done/);
      const locked = await runCli(['migrate'], {}, dir);
      expect(locked.code).toBe(1);
      expect(locked.stderr).toMatch(/in use by process \d+/);
    } finally {
      // Also when an assertion above failed: a serve left running would hold the folder's database.
      serve.kill('SIGTERM');
    }
    const served = await done;
    expect(served.code).toBe(0);
    expect(served.stdout).toMatch(/PAYHOOKS_API_KEY is not set/);
    expect(served.stdout).not.toContain('my-endpoint-secret');

    const listed = await runCli(['events', 'list', '--json'], {}, dir);
    expect(listed.code).toBe(0);
    const events = JSON.parse(listed.stdout) as {
      eventId: string;
      eventType: string;
      status: string;
      attempts: number;
      deliveries: number;
      lastError: null;
    }[];
    expect(events).toEqual([
      expect.objectContaining({
        eventId: 'evt_curl_1',
        eventType: 'CUSTOMER_CREATED',
        status: 'done',
        attempts: 1,
        deliveries: 2,
        lastError: null,
      }),
    ]);

    const shown = await runCli(['events', 'show', 'evt_curl_1'], {}, dir);
    expect(JSON.parse(shown.stdout)).toMatchObject({ eventId: 'evt_curl_1', rawBody: expect.stringContaining('"username":"ada"') });

    // The customer is in the mirror, from the event's own snapshot (no API key).
    const store = await openDatabase({ dataDir: join(dir, '.payhooks', 'pgdata') });
    try {
      const { rows } = await sql<{ id: string; username: string; source: string; last_event_id: string }>`
        select id, username, source, last_event_id from payhooks_mirror.customers`.execute(store.db);
      expect(rows).toEqual([{ id: 'cus_1', username: 'ada', source: 'event', last_event_id: 'evt_curl_1' }]);
    } finally {
      await store.close();
    }
  });
});

// The other argument errors, --help and --version are driven in-process in test/cli/arguments.test.ts; these need
// a real process: the exit code it exits with, what reaches its pipes, and a database opened on disk.
describe('command-line errors, as a process', () => {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-cli-'));
  // A database that exists (its first start is the newcomer's test above), so `events show` skips initdb and the migrations.
  seedDataDir(join(dir, 'pgdata'));

  it.each([
    [['events', 'show', 'evt_missing'], {}, /No stored event with eventId evt_missing/],
    [['nonsense'], {}, /unknown command 'nonsense'/],
  ] as const)('payhooks %j fails clearly', { timeout: 90_000 }, async (args, env, message) => {
    const result = await runCli([...args], { DATABASE_URL: '', PAYHOOKS_DATA_DIR: join(dir, 'pgdata'), ...env }, dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
  });

  it('--version prints the version of package.json', { timeout: 90_000 }, async () => {
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    const result = await runCli(['--version']);
    expect(result).toMatchObject({ code: 0, stdout: `${version}\n` });
  });
});

describe.skipIf(!pgUrl)('payhooks migrate on the real PostgreSQL server', () => {
  it('two migrators started at once on a fresh schema both succeed and each file is applied once', { timeout: 60_000 }, async () => {
    const schema = uniqueSchema('migrate');
    const env = { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema };
    const [a, b] = await Promise.all([runCli(['migrate'], env), runCli(['migrate'], env)]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const outputs = [a.stdout.trim(), b.stdout.trim()].sort();
    const files = readMigrations().map((m) => m.name);
    expect(outputs).toEqual([`applied: ${files.join(', ')}`, 'the schema is up to date'].sort());
    const store = await openDatabase({ url: pgUrl!, schema });
    try {
      const { rows } = await sql<{ name: string }>`select name from ${sql.id(schema, 'schema_migrations')} order by name`.execute(store.db);
      expect(rows.map((r) => r.name)).toEqual(files);
    } finally {
      await dispose(store);
    }
  });
});
