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
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';
import { waitFor } from '../helpers/wait.js';

const handlers = fileURLToPath(new URL('../fixtures/handlers.mjs', import.meta.url));
const scheme = createDefaultScheme({ secrets: 'partition-secret' });
const STOP_TIMEOUT_MS = 5000;

function handledIds(path: string): string[] {
  try {
    return readFileSync(path, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ')[0]!);
  } catch {
    return [];
  }
}

async function readyStatus(base: string): Promise<number> {
  return (await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(5000) })).status;
}

describe.skipIf(!pgUrl)('payhooks serve across a partition from its database (a loopback proxy drops every byte)', () => {
  const schema = uniqueSchema('partition');
  let proxy: TcpProxy | undefined;
  afterAll(async () => {
    await proxy?.close();
    await dispose(await openDatabase({ url: pgUrl!, schema }));
  });

  it('comes back within seconds of the database, and a SIGTERM during a partition exits within the stop timeout plus 2 s', {
    timeout: 180_000,
  }, async () => {
    const target = new URL(pgUrl!);
    proxy = await startTcpProxy(Number(target.port || 5432), target.hostname);
    const viaProxy = new URL(pgUrl!);
    viaProxy.port = String(proxy.port);
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-partition-'));
    const handled = join(dir, 'handled.txt');
    const env = {
      PAYHOOKS_WEBHOOK_SECRET: 'partition-secret',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: viaProxy.href,
      PAYHOOKS_SCHEMA: schema,
      HANDLED_FILE: handled,
      // Shorter than the default 30 s: the bound below follows it, so the variable is checked as well.
      PAYHOOKS_STOP_TIMEOUT_MS: String(STOP_TIMEOUT_MS),
    };
    const serve = spawnCli(['serve', '--handlers', handlers], env, dir);
    const done = collect(serve, 170_000);
    const url = String((await waitForLog(serve, /receiving webhooks/, 60_000)).url);
    const base = url.replace(/\/webhooks$/, '');

    const first = exampleEvent('INVOICE_PAID', { eventId: 'evt_before' });
    expect((await post(url, signedDelivery(scheme, first))).status).toBe(200);
    await waitFor(() => handledIds(handled).includes('evt_before'), 'the handler before the partition');

    // The partition: old connections and new ones alike go silent, and nothing is closed.
    proxy.blackhole();
    expect(await readyStatus(base)).toBe(503);
    const during = exampleEvent('INVOICE_PAID', { eventId: 'evt_during' });
    expect((await post(url, signedDelivery(scheme, during))).status).toBe(503);

    // The database returns for new connections; the old ones stay silent forever.
    proxy.heal();
    const healedAt = Date.now();
    await waitFor(async () => (await readyStatus(base)) === 200, 'readiness after the database returned', 5000);
    const after = exampleEvent('INVOICE_PAID', { eventId: 'evt_after' });
    expect((await post(url, signedDelivery(scheme, after))).status).toBe(200);
    const backWithinMs = Date.now() - healedAt;
    expect(backWithinMs).toBeLessThan(5000);
    // The sender retries what got 503; the retry is stored, and the worker's claim loop, stuck on a silent
    // connection during the partition, runs again: both end handled.
    expect((await post(url, signedDelivery(scheme, during))).status).toBe(200);
    await waitFor(
      () => ['evt_during', 'evt_after'].every((id) => handledIds(handled).includes(id)),
      'the worker after the partition',
      40_000,
    );

    // A partition again, then SIGTERM: the stop may not finish cleanly, but it must end in bounded time.
    proxy.blackhole();
    const stoppedAt = Date.now();
    serve.kill('SIGTERM');
    const { code } = await done;
    const stopMs = Date.now() - stoppedAt;
    expect(stopMs).toBeLessThan(STOP_TIMEOUT_MS + 2000);
    expect(code).not.toBeNull(); // it exited by itself: collect() would have killed it otherwise
    console.info(
      `partition: back ${backWithinMs} ms after the database returned; SIGTERM during a partition exited in ${stopMs} ms (code ${code})`,
    );
  });
});
