import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase } from '../../src/store/database.js';
import { collect, spawnCli, waitForLog } from '../helpers/cli.js';
import { post, signedDelivery } from '../helpers/deliveries.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const handlers = fileURLToPath(new URL('../fixtures/spinning-handlers.mjs', import.meta.url));
const scheme = createDefaultScheme({ secrets: 'spin-secret' });

function lines(path: string): string[] {
  try {
    return readFileSync(path, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe.skipIf(!pgUrl)('payhooks serve on PostgreSQL with a CPU-bound handler', () => {
  const schema = uniqueSchema('spin');
  afterAll(async () => {
    await dispose(await openDatabase({ url: pgUrl!, schema }));
  });

  it('acknowledges in under 1 s while a handler spins for 15 s: handlers run in a worker process of their own', {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-spin-'));
    const handled = join(dir, 'handled.txt');
    const env = {
      PAYHOOKS_WEBHOOK_SECRET: 'spin-secret',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: pgUrl!,
      PAYHOOKS_SCHEMA: schema,
      HANDLED_FILE: handled,
      SPIN_MS: '15000',
    };
    const serve = spawnCli(['serve', '--handlers', handlers], env, dir);
    const done = collect(serve, 110_000);
    const url = String((await waitForLog(serve, /receiving webhooks/, 60_000)).url);

    expect((await post(url, signedDelivery(scheme, exampleEvent('INVOICE_PAID', { eventId: 'evt_spin' })))).status).toBe(200);
    await waitFor(() => lines(handled).includes('start evt_spin'), 'the handler to start spinning', 30_000);

    const started = performance.now();
    const answer = await post(url, signedDelivery(scheme, exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_meanwhile' })));
    const ackMs = performance.now() - started;
    expect(answer.status).toBe(200);
    // Still spinning (15 s) while we were answered: the answer did not wait for the handler, however slow the machine.
    expect(lines(handled)).not.toContain('end evt_spin');
    console.info(`cpu-bound handler: acknowledged in ${ackMs.toFixed(0)} ms while the handler spun`);

    serve.kill('SIGTERM');
    const { code } = await done;
    expect(code).not.toBeNull();
  });
});
