import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { writeSimulatorSession } from '../../src/service/simulator-session.js';
import { startSimulator } from '../../src/simulator/index.js';
import { openDatabase } from '../../src/store/database.js';
import { runBackfill } from '../../src/sync/backfill.js';
import { runCli } from '../helpers/cli.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

// The first session of a new user: `payhooks simulate --forward-to` left .payhooks/simulator.json and `serve` read
// its secret and API from it; `verify` run in the same folder must find the API there too (before, it stopped with
// "PAYHOOKS_API_KEY is not set", so that session had no way to check its mirror).

const silent = pino({ level: 'silent' });

describe('payhooks verify beside a simulator session', () => {
  it('takes the API from .payhooks/simulator.json when no key or URL is set, says so on stderr, and proves the mirror', {
    timeout: 120_000,
  }, async () => {
    const simulator = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
    const cwd = mkdtempSync(join(tmpdir(), 'payhooks-verify-session-'));
    const dataDir = seedDefaultDataDir(cwd);
    try {
      const apiKey = 'sk_test_local';
      const api = createClient({ apiKey, environment: simulator.url, rateLimit: false });
      const endpoint = await api.webhooks.create({
        url: 'http://127.0.0.1:8787/webhooks',
        description: 'session',
        enabledEvents: ['CUSTOMER_CREATED'],
      });
      await writeSimulatorSession(join(cwd, '.payhooks'), {
        version: 1,
        url: simulator.url,
        apiKey,
        endpointId: endpoint.id,
        secret: (await api.webhooks.getSecret(endpoint.id)).secret,
        forwardTo: endpoint.url,
        enabledEvents: endpoint.enabledEvents,
        pid: process.pid,
        startedAt: new Date().toISOString(),
      });
      const customers: string[] = [];
      for (let i = 0; i < 3; i++) customers.push((await api.customers.create({ username: `session${i}` })).id);
      // The mirror as serve would have kept it in the default schemas, one row then lost.
      const store = await openDatabase({ dataDir });
      try {
        await runBackfill({ store, api, resources: ['customers'] });
        await sql`delete from payhooks_mirror.customers where id = ${customers[1]!}`.execute(store.db);
      } finally {
        await store.close();
      }

      const env = { DATABASE_URL: '', PAYHOOKS_DATA_DIR: undefined, PAYHOOKS_API_KEY: undefined, PAYHOOKS_API_URL: undefined };
      const found = await runCli(['verify', '--resource', 'customers'], env, cwd, 90_000);
      expect(found.stderr).toContain(`using the simulator session from`);
      expect(found.stderr).toContain(`the API at ${simulator.url}`);
      expect(found.stdout).toContain(`missing customers ${customers[1]}`);
      expect(found.code).toBe(3);

      // The environment wins: a key of its own and no URL is not the session's API (and is refused as before).
      const own = await runCli(['verify', '--resource', 'customers'], { ...env, PAYHOOKS_API_URL: 'http://127.0.0.1:9' }, cwd, 90_000);
      expect(own.stderr).not.toContain('using the simulator session');
      expect(own.stderr).toContain('PAYHOOKS_API_KEY is not set');
      expect(own.code).toBe(1);
    } finally {
      await simulator.close();
    }
  });
});
