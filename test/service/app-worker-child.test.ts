// Issue 46: an app that runs the service through payhooks/service on PostgreSQL, with its handlers in a module. Its
// worker child is payhooks' own command line (not the app's script started again), imports that module, and stops
// with the app.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase } from '../../src/store/database.js';
import { collect, libraryEntry, logLines } from '../helpers/cli.js';
import { post, signedDelivery } from '../helpers/deliveries.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const app = fileURLToPath(new URL('../fixtures/service-app.mjs', import.meta.url));
const scheme = createDefaultScheme({ secrets: 'app-secret' });

describe.skipIf(!pgUrl)('an app running the service through payhooks/service on PostgreSQL', () => {
  const schema = uniqueSchema('app_child');
  afterAll(async () => {
    const store = await openDatabase({ url: pgUrl!, schema });
    await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
    await dispose(store);
  });

  it("runs its handlers module in a worker child started from payhooks' entry; the app's script is started once", {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-app-child-'));
    const starts = join(dir, 'starts.txt');
    const handled = join(dir, 'handled.txt');
    writeFileSync(starts, '');
    writeFileSync(handled, '');
    // The library from the fresh build (as an installed package), else the sources through tsx.
    const { execArgv, entry } = libraryEntry();
    const child = spawn(process.execPath, [...execArgv, app], {
      cwd: dir,
      env: {
        ...process.env,
        PAYHOOKS_TEST_SERVICE_ENTRY: entry.replace(/index\.([jt]s)$/, 'service/index.$1'),
        APP_STARTS_FILE: starts,
        HANDLED_FILE: handled,
        PAYHOOKS_WEBHOOK_SECRET: 'app-secret',
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: pgUrl!,
        PAYHOOKS_SCHEMA: schema,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const done = collect(child, 110_000);
    const lines = logLines(child);
    try {
      const receiving = () => lines.find((l) => l.pid === child.pid && l.msg === 'payhooks is receiving webhooks');
      await waitFor(() => receiving() !== undefined, 'the app to receive', 60_000);
      const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_app_child' });
      expect((await post(String(receiving()!.url), signedDelivery(scheme, event))).status).toBe(200);
      await waitFor(() => readFileSync(handled, 'utf8') !== '', 'the handler to run', 60_000);
      expect(readFileSync(handled, 'utf8')).toBe(`evt_app_child ${event.data.invoiceId}\n`);
      // Run by the worker child, not by the app's process.
      await waitFor(() => lines.some((l) => l.msg === 'event processed'), 'the event processed');
      const workerPid = lines.find((l) => l.msg === 'worker process started')?.pid;
      expect(lines.filter((l) => l.msg === 'event processed').map((l) => l.pid)).toEqual([workerPid]);
      expect(workerPid).not.toBe(child.pid);
      // The app's script ran once, in its own process, without arguments.
      expect(readFileSync(starts, 'utf8')).toBe(`${child.pid} []\n`);
    } finally {
      child.kill('SIGTERM');
    }
    const exit = await done;
    expect(exit.code, exit.stderr).toBe(0);
    expect(readFileSync(starts, 'utf8').split('\n').filter(Boolean)).toHaveLength(1);
  });
});
