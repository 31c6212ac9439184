import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase } from '../../src/store/database.js';
import { collect, logLines, spawnCli } from '../helpers/cli.js';
import { post, signedDelivery } from '../helpers/deliveries.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { statuses } from '../helpers/inbox.js';
import { dispose } from '../helpers/stores.js';
import { isRunning } from '../helpers/processes.js';
import { waitFor } from '../helpers/wait.js';

const scheme = createDefaultScheme({ secrets: 'split-secret' });
const waitingHandlers = fileURLToPath(new URL('../fixtures/waiting-handlers.mjs', import.meta.url));
const failsOnceHandlers = fileURLToPath(new URL('../fixtures/fails-once-handlers.mjs', import.meta.url));

describe.skipIf(!pgUrl)('payhooks serve on PostgreSQL, its worker in a child process', () => {
  const schema = uniqueSchema('split');
  const mirrorSchema = uniqueSchema('split_mirror');
  afterAll(async () => {
    const store = await openDatabase({ url: pgUrl!, schema });
    await sql.raw(`drop schema if exists "${mirrorSchema}" cascade`).execute(store.db);
    await dispose(store);
  });

  it('runs the mirror in its worker child: the process that acknowledges runs no handler, and the events are mirrored', {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-split-'));
    const env = {
      PAYHOOKS_WEBHOOK_SECRET: 'split-secret',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: pgUrl!,
      PAYHOOKS_SCHEMA: schema,
      PAYHOOKS_MIRROR_SCHEMA: mirrorSchema,
    };
    const serve = spawnCli(['serve'], env, dir);
    const done = collect(serve, 110_000);
    const lines = logLines(serve);
    const store = await openDatabase({ url: pgUrl!, schema });
    try {
      // The worker child logs that it receives too, on a port of its own: the receiver is the line of serve's own pid.
      await waitFor(() => lines.some((l) => l.pid === serve.pid && l.msg === 'payhooks is receiving webhooks'), 'serve to listen', 60_000);
      const url = String(lines.find((l) => l.pid === serve.pid && l.msg === 'payhooks is receiving webhooks')?.url);
      const events = ['cus_split_1', 'cus_split_2', 'cus_split_3'].map((id, i) => {
        const base = exampleEvent('CUSTOMER_CREATED', { eventId: `evt_split_${i + 1}` });
        return { ...base, data: { ...base.data, id } };
      });
      for (const event of events) expect((await post(url, signedDelivery(scheme, event))).status).toBe(200);

      const mirrored = async () => {
        const { rows } = await sql<{ id: string }>`select id from ${sql.id(mirrorSchema, 'customers')} order by id`
          .execute(store.db)
          .catch(() => ({ rows: [] }));
        return rows.map((row) => row.id);
      };
      await waitFor(async () => (await mirrored()).length === 3, 'the three customers mirrored', 60_000);
      expect(await mirrored()).toEqual(['cus_split_1', 'cus_split_2', 'cus_split_3']);
      await waitFor(() => lines.filter((l) => l.msg === 'event processed').length === 3, 'three events processed');

      const processed = lines.filter((l) => l.msg === 'event processed');
      expect(processed.map((l) => l.eventId).sort()).toEqual(events.map((e) => e.eventId));
      // Run by another process than the one that acknowledged, which runs no handler at all.
      expect(processed.map((l) => l.pid).filter((pid) => pid === serve.pid)).toEqual([]);
      expect(lines.some((l) => l.msg === 'worker process started')).toBe(true);
      // The child's runs are reported to serve, whose /metrics is the one scraped.
      const metrics = () => fetch(url.replace(/\/webhooks$/, '/metrics')).then((response) => response.text());
      await waitFor(
        async () => /^payhooks_handler_duration_seconds_count\{handler="mirror"\} 3$/m.test(await metrics()),
        "the mirror's 3 runs in serve's /metrics",
      );
      expect(await metrics()).toMatch(/payhooks_webhook_responses_total\{status="200"\} 3/);
    } finally {
      serve.kill('SIGTERM');
      await store.close();
    }
    expect((await done).code).toBe(0);
  });

  it("counts the handler runs of its worker child in serve's own /metrics: 3 events through a handler that fails once", {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-split-metrics-'));
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ worker: { backoff: { baseMs: 50, maxMs: 100 } } }));
    const metricsSchema = uniqueSchema('split_metrics');
    const env = {
      PAYHOOKS_WEBHOOK_SECRET: 'split-secret',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: pgUrl!,
      PAYHOOKS_SCHEMA: metricsSchema,
    };
    const serve = spawnCli(['serve', '--handlers', failsOnceHandlers], env, dir);
    const done = collect(serve, 110_000);
    const lines = logLines(serve);
    const store = await openDatabase({ url: pgUrl!, schema: metricsSchema });
    try {
      await waitFor(() => lines.some((l) => l.pid === serve.pid && l.msg === 'payhooks is receiving webhooks'), 'serve to listen', 60_000);
      const url = String(lines.find((l) => l.pid === serve.pid && l.msg === 'payhooks is receiving webhooks')?.url);
      for (const n of [1, 2, 3]) {
        const event = exampleEvent('CUSTOMER_CREATED', { eventId: `evt_split_metrics_${n}` });
        expect((await post(url, signedDelivery(scheme, event))).status).toBe(200);
      }
      await waitFor(
        async () => Object.values(await statuses(store)).filter((status) => status === 'done').length === 3,
        'the three events done',
        60_000,
      );
      const metrics = () => fetch(url.replace(/\/webhooks$/, '/metrics')).then((response) => response.text());
      await waitFor(
        async () => /^payhooks_handler_duration_seconds_count\{handler="fails-once"\} 6$/m.test(await metrics()),
        "6 runs in serve's /metrics",
      );
      const scraped = await metrics();
      expect(scraped).toMatch(/^payhooks_handler_failures_total\{handler="fails-once",account="default"\} 3$/m);
      // Run in the child: serve's own process ran none of them.
      const processed = lines.filter((l) => l.msg === 'event processed');
      expect(processed).toHaveLength(3);
      expect(processed.filter((l) => l.pid === serve.pid)).toEqual([]);
    } finally {
      serve.kill('SIGTERM');
      await dispose(store);
    }
    expect((await done).code).toBe(0);
  });

  it('hands the worker child the resolved configuration: a restarted child runs with it though the file broke since', {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-split-config-'));
    writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ mirror: false, worker: { concurrency: 3, maxAttempts: 4 } }));
    const env = { PAYHOOKS_WEBHOOK_SECRET: 'split-secret', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema };
    const serve = spawnCli(['serve'], env, dir);
    const done = collect(serve, 110_000);
    const lines = logLines(serve);
    const running = () => lines.filter((l) => l.pid !== serve.pid && typeof l.msg === 'string' && l.msg.startsWith('running:'));
    try {
      await waitFor(() => running().length === 1, 'the worker child to run', 60_000);
      expect(running()[0]).toMatchObject({ concurrency: 3, maxAttempts: 4 });
      // Were the child to read the environment and the file again, the restarted one would stop at this.
      writeFileSync(join(dir, 'payhooks.config.json'), '{ not json');
      process.kill(Number(running()[0]!.pid), 'SIGKILL');
      await waitFor(() => running().length === 2, 'the restarted worker child to run', 60_000);
      expect(running()[1]).toMatchObject({ concurrency: 3, maxAttempts: 4 });
      expect(running()[1]!.pid).not.toBe(running()[0]!.pid);
    } finally {
      serve.kill('SIGTERM');
    }
    const exit = await done;
    expect(exit.code, exit.stderr).toBe(0);
    // The resolved configuration (secrets included) never reaches a log line.
    expect(exit.stdout).not.toContain('split-secret');
  });

  it('stops its worker child when serve is SIGKILLed: the child gives its lease back, stops and is gone', {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-split-kill-'));
    const handled = join(dir, 'handled.txt');
    writeFileSync(handled, '');
    const env = {
      PAYHOOKS_WEBHOOK_SECRET: 'split-secret',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: pgUrl!,
      PAYHOOKS_SCHEMA: schema,
      // The child aborts the handler that waits at a stop after 1 s instead of 30.
      PAYHOOKS_STOP_TIMEOUT_MS: '1000',
      HANDLED_FILE: handled,
    };
    const serve = spawnCli(['serve', '--handlers', waitingHandlers], env, dir);
    // Its stdout closes only when every process writing to it has ended: the worker child too.
    const done = collect(serve, 110_000);
    const lines = logLines(serve);
    const store = await openDatabase({ url: pgUrl!, schema });
    let childPid: number | undefined;
    try {
      await waitFor(() => lines.some((l) => l.pid === serve.pid && l.msg === 'payhooks is receiving webhooks'), 'serve to listen', 60_000);
      const url = String(lines.find((l) => l.pid === serve.pid && l.msg === 'payhooks is receiving webhooks')?.url);
      childPid = Number(lines.find((l) => l.msg === 'worker process started')?.pid);
      expect(childPid).toBeGreaterThan(0);
      expect(childPid).not.toBe(serve.pid);
      const event = exampleEvent('INVOICE_PAID', { eventId: 'evt_split_kill' });
      expect((await post(url, signedDelivery(scheme, event))).status).toBe(200);
      // The child runs the handler, which waits: the event is leased by the child.
      await waitFor(() => readFileSync(handled, 'utf8').includes('start evt_split_kill'), 'the handler to start', 60_000);
      expect(readFileSync(handled, 'utf8')).toBe(`start evt_split_kill ${childPid}\n`);
      expect((await statuses(store)).evt_split_kill).toBe('processing');

      serve.kill('SIGKILL');
      const killedAt = Date.now();
      // The bound is 5 s; the wait is longer so that a busy machine does not fail it, and the time is reported.
      await waitFor(() => !isRunning(childPid!), 'the worker child to be gone after serve was SIGKILLed', 30_000);
      console.info(`the worker child was gone ${Date.now() - killedAt} ms after serve was SIGKILLed`);
      // It stopped as on SIGTERM: for this reason, and giving the lease of the handler it aborted back.
      const stopping = lines.find((l) => l.pid === childPid && l.msg === 'shutting down');
      expect(stopping?.reason).toBe('the serve process that started this worker is gone');
      expect((await statuses(store)).evt_split_kill).toBe('pending');
      expect((await done).code).toBeNull();
    } finally {
      serve.kill('SIGKILL');
      // Without the fix the orphan would run on: it is ended here, by its pid, so that it does not outlive the test.
      if (childPid !== undefined && isRunning(childPid)) process.kill(childPid, 'SIGKILL');
      await store.close();
    }
  });

  it('stops a worker child whose serve was SIGKILLed while the child was still starting', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-split-early-kill-'));
    const env = { PAYHOOKS_WEBHOOK_SECRET: 'split-secret', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema };
    const serve = spawnCli(['serve'], env, dir);
    const done = collect(serve, 110_000);
    const lines = logLines(serve);
    let childPid: number | undefined;
    try {
      await waitFor(() => lines.some((l) => l.msg === 'worker process started'), 'serve to start its worker child', 60_000);
      childPid = Number(lines.find((l) => l.msg === 'worker process started')?.pid);
      // At once: the child is still loading its modules, before it could listen for its parent's end.
      serve.kill('SIGKILL');
      expect(childPid).toBeGreaterThan(0);
      expect(isRunning(childPid)).toBe(true);
      await waitFor(() => !isRunning(childPid!), 'the worker child to be gone after serve was SIGKILLed', 60_000);
      const stopping = lines.find((l) => l.pid === childPid && l.msg === 'shutting down');
      expect(stopping?.reason).toBe('the serve process that started this worker is gone');
      expect((await done).code).toBeNull();
    } finally {
      serve.kill('SIGKILL');
      if (childPid !== undefined && isRunning(childPid)) process.kill(childPid, 'SIGKILL');
    }
  });
});
