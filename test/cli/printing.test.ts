import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { printable, printableJson } from '../../src/cli/format.js';
import { openDatabase } from '../../src/store/database.js';
import { storeEvent } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { runCli } from '../helpers/cli.js';
import { seedDataDir } from '../helpers/pglite-template.js';

// An escape sequence that clears the screen, a C1 control (CSI), and a forged line break.
const hostile = 'evt_\u001b[2J\u009b31m\nFAKE';

/** True when the text holds ESC or CSI as such, which a terminal would act on. */
function rawControl(text: string): boolean {
  return text.includes('\u001b') || text.includes('\u009b');
}

describe('printing stored data', () => {
  it('escapes control characters in table cells, and the ones JSON leaves raw in JSON', () => {
    expect(printable(hostile)).toBe('evt_\\u001b[2J\\u009b31m\\u000aFAKE');
    const json = printableJson(JSON.stringify({ id: hostile }, null, 2));
    expect(rawControl(json)).toBe(false);
    expect(JSON.parse(json)).toEqual({ id: hostile });
  });

  it('events list and events show never put a stored control character on the terminal', { timeout: 90_000 }, async () => {
    const dataDir = seedDataDir(join(mkdtempSync(join(tmpdir(), 'payhooks-print-')), 'pgdata'));
    const store = await openDatabase({ dataDir });
    try {
      await migrate(store);
      const rawBody = JSON.stringify({ eventId: hostile, eventType: 'CUSTOMER_CREATED', data: { note: hostile } });
      await storeEvent(store, { eventId: hostile, eventType: 'CUSTOMER_CREATED', resourceKey: null, rawBody, headers: {} });
    } finally {
      await store.close();
    }
    const env = { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir };
    const list = await runCli(['events', 'list'], env);
    expect(list.code).toBe(0);
    expect(rawControl(list.stdout)).toBe(false);
    expect(list.stdout).toContain('evt_\\u001b[2J\\u009b31m\\u000aFAKE');
    expect(list.stdout.split('\n').some((line) => line.startsWith('FAKE'))).toBe(false);
    for (const args of [
      ['events', 'list', '--json'],
      ['events', 'show', hostile],
    ]) {
      const shown = await runCli(args, env);
      expect(shown.code).toBe(0);
      expect(rawControl(shown.stdout)).toBe(false);
      expect(JSON.stringify(JSON.parse(shown.stdout))).toContain('FAKE');
    }
  });
});
