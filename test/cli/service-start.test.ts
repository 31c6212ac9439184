import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino, type Logger } from 'pino';
import { describe, expect, it } from 'vitest';
import { resolveServiceConfig } from '../../src/service/resolve-service-config.js';
import { startService } from '../../src/service/start-service.js';
import { exampleEvent } from '../../src/events/index.js';
import { openDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import type { EventStatus } from '../../src/store/schema.js';
import { putEvent, setState } from '../helpers/inbox.js';

const fixture = fileURLToPath(new URL('../fixtures/app-migrations/', import.meta.url));

function capturingLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  return { logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }), lines };
}

const baseEnv = { PAYHOOKS_WEBHOOK_SECRET: 'start-secret', PORT: '0', HOST: '127.0.0.1' };

describe('payhooks serve at start', () => {
  it('counts dead, invalid and ignored events and says how to look at them; applies PAYHOOKS_APP_MIGRATIONS', {
    timeout: 120_000,
  }, async () => {
    const dataDir = join(mkdtempSync(join(tmpdir(), 'payhooks-start-')), 'pgdata');
    const store = await openDatabase({ dataDir });
    try {
      await migrate(store);
      const states: Record<string, EventStatus> = {
        evt_s_dead: 'dead',
        evt_s_ign_1: 'ignored',
        evt_s_ign_2: 'ignored',
        evt_s_done: 'done',
        evt_s_pending: 'pending',
      };
      for (const [eventId, status] of Object.entries(states)) {
        await putEvent(store, exampleEvent('CUSTOMER_CREATED', { eventId }));
        await setState(store, eventId, status);
      }
    } finally {
      await store.close();
    }

    const { logger, lines } = capturingLogger();
    const config = await resolveServiceConfig({ env: { ...baseEnv, PAYHOOKS_DATA_DIR: dataDir, PAYHOOKS_APP_MIGRATIONS: fixture } });
    const service = await startService(config, { logger, role: 'receiver' });
    try {
      const summary = lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('stored events need attention'));
      expect(summary).toMatchObject({ level: 40, dead: 1, invalid: 0, ignored: 2 });
      expect(summary?.msg).toContain('1 dead, 0 invalid, 2 ignored');
      expect(summary?.msg).toContain('`payhooks events list --status dead`');
      expect(summary?.msg).toContain('`payhooks replay --status dead`');
      expect(lines.find((l) => l.msg === "applied the app's migrations")).toMatchObject({
        applied: ['001_paid_invoices.sql', '002_paid_invoices_currency.sql'],
        appSchema: 'public',
      });
      const db = await service.hooks.appDb<{ paid_invoices: { invoice_id: string } }>();
      expect(await db.selectFrom('paid_invoices').selectAll().execute()).toEqual([]);
    } finally {
      await service.close();
    }
  });

  it('says so when nothing waits for a person', { timeout: 120_000 }, async () => {
    const { logger, lines } = capturingLogger();
    const config = await resolveServiceConfig({ env: { ...baseEnv, PAYHOOKS_DATA_DIR: 'memory://' } });
    const service = await startService(config, { logger, role: 'receiver' });
    await service.close();
    expect(lines.find((l) => l.msg === 'no dead, invalid or ignored events are stored')).toMatchObject({
      level: 30,
      dead: 0,
      invalid: 0,
      ignored: 0,
    });
  });
});
