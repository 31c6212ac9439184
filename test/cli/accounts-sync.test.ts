import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { type Simulator, startSimulator } from '../../src/simulator/index.js';
import { openDatabase } from '../../src/store/database.js';
import { runInProcess } from '../helpers/cli.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';

// Issue 48: backfill, verify and reconcile run for each configured account in turn, each through its own API key
// (two simulators stand for two organizations), or for one with --account.

const silent = pino({ level: 'silent' });

describe.skipIf(!pgUrl)('backfill and verify per account, from the command line', () => {
  let north: Simulator;
  let south: Simulator;
  const northIds: string[] = [];
  const southIds: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-accounts-sync-'));
  const schema = uniqueSchema('acc_cli');
  const mirrorSchema = `${schema}_mirror`;
  let env: Record<string, string>;

  beforeAll(async () => {
    north = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
    south = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
    const northApi = createClient({ apiKey: 'sk_test_north', environment: north.url, rateLimit: false });
    const southApi = createClient({ apiKey: 'sk_test_south', environment: south.url, rateLimit: false });
    for (let i = 0; i < 2; i++) northIds.push((await northApi.customers.create({ username: `n${i}` })).id);
    southIds.push((await southApi.customers.create({ username: 's0' })).id);
    writeFileSync(
      join(dir, 'payhooks.config.json'),
      JSON.stringify({
        accounts: [
          { id: 'north', secrets: { env: 'NORTH_SECRET' }, apiKey: { env: 'NORTH_KEY' }, apiUrl: north.url },
          { id: 'south', secrets: { env: 'SOUTH_SECRET' }, apiKey: { env: 'SOUTH_KEY' }, apiUrl: south.url },
        ],
      }),
    );
    env = {
      DATABASE_URL: pgUrl!,
      PAYHOOKS_SCHEMA: schema,
      PAYHOOKS_MIRROR_SCHEMA: mirrorSchema,
      NORTH_SECRET: 'whsec_north',
      SOUTH_SECRET: 'whsec_south',
      NORTH_KEY: 'sk_test_north',
      SOUTH_KEY: 'sk_test_south',
    };
  }, 60_000);
  afterAll(async () => {
    await north?.close();
    await south?.close();
    if (pgUrl) {
      const store = await openDatabase({ url: pgUrl, schema });
      await sql.raw(`drop schema if exists "${mirrorSchema}" cascade; drop schema if exists "${schema}" cascade`).execute(store.db);
      await store.close();
    }
  });

  it('backfill fills each account from its own service; verify --account finds the row missing in that account only', {
    timeout: 120_000,
  }, async () => {
    const filled = await runInProcess(['backfill', '--resource', 'customers'], env, dir);
    expect(filled.stderr).not.toContain('payhooks:');
    expect(filled.code).toBe(0);
    expect(filled.stdout.split('\n').filter((line) => line.startsWith('account '))).toEqual(['account north:', 'account south:']);

    const store = await openDatabase({ url: pgUrl!, schema });
    try {
      const { rows } = await sql<{ account: string; id: string }>`
        select account, id from ${sql.id(mirrorSchema, 'customers')} order by account, id`.execute(store.db);
      expect(rows).toEqual([
        ...[...northIds].sort().map((id) => ({ account: 'north', id })),
        ...southIds.map((id) => ({ account: 'south', id })),
      ]);
      await sql`delete from ${sql.id(mirrorSchema, 'customers')} where account = 'north' and id = ${northIds[0]!}`.execute(store.db);
    } finally {
      await store.close();
    }

    const northOnly = await runInProcess(['verify', '--account', 'north', '--resource', 'customers', '--json'], env, dir);
    expect(northOnly.code).toBe(3);
    const northReport = JSON.parse(northOnly.stdout) as { account: string; drift: { id: string; kind: string }[] }[];
    expect(northReport.map((r) => [r.account, r.drift.map((d) => [d.id, d.kind])])).toEqual([['north', [[northIds[0], 'missing']]]]);

    const southOnly = await runInProcess(['verify', '--account', 'south', '--resource', 'customers'], env, dir);
    expect(southOnly.code).toBe(0);
    expect(southOnly.stdout).toMatch(/^account south:\ncustomers: 1 checked, all match/);

    const every = await runInProcess(['verify', '--resource', 'customers', '--json'], env, dir);
    expect(every.code).toBe(3);
    expect((JSON.parse(every.stdout) as { account: string; matches: boolean }[]).map((r) => [r.account, r.matches])).toEqual([
      ['north', false],
      ['south', true],
    ]);
  });

  it('an --account that is not configured is refused before anything opens, naming the configured ones', async () => {
    for (const command of ['backfill', 'verify', 'reconcile']) {
      const refused = await runInProcess([command, '--account', 'west'], env, dir);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('--account west is not configured: the configured accounts are north, south.');
    }
    const bad = await runInProcess(['verify', '--account', 'West Gym'], env, dir);
    expect(bad.stderr).toContain('--account takes an account id');
  });
});
