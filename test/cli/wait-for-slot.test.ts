// `serve --role worker` started while the server answers "sorry, too many clients already" (SQLSTATE 53300) waits,
// says so and why, and starts once a slot frees, instead of exiting at once (issue 49; before, only an outside
// supervisor brought it back). On a throwaway cluster of this file's own with a few slots the test holds, then frees:
// never on the shared server, whose slots other suites use.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collect, logLines, spawnCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { startThrowawayCluster, type ThrowawayCluster, throwawayClusterAvailable } from '../helpers/throwaway-cluster.js';

// Enough for serve once it is admitted: its pool (10) and its LISTEN connection. At start it reads several things
// at once (the accounts' tables, the alarms' first readings, the partitions), and with 6 slots it was refused a seventh
// connection after admission, which is this cluster's size, not what the test is about.
const SLOTS = 12;

/** Opens connections until the server refuses one with 53300; returns those it admitted (all its slots). */
async function holdEverySlot(url: string): Promise<pg.Client[]> {
  const held: pg.Client[] = [];
  for (let i = 0; i < SLOTS + 5; i++) {
    const client = new pg.Client({ connectionString: url });
    client.on('error', () => undefined);
    try {
      await client.connect();
      held.push(client);
    } catch (err) {
      expect((err as { code?: string }).code).toBe('53300');
      return held;
    }
  }
  throw new Error(`the server admitted ${held.length} connections with max_connections ${SLOTS}`);
}

describe.skipIf(!throwawayClusterAvailable)('serve --role worker while the server has no free connection slot', () => {
  let cluster: ThrowawayCluster | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-slot-'));
  beforeAll(async () => {
    cluster = await startThrowawayCluster({ maxConnections: SLOTS });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** `serve --role worker` on the cluster, its log lines as they come, and its exit (killed after `timeoutMs`). */
  function startWorker(timeoutMs: number) {
    const env = { DATABASE_URL: cluster!.url, PORT: '0', HOST: '127.0.0.1', PAYHOOKS_WEBHOOK_SECRET: 'slot-secret' };
    const worker = spawnCli(['serve', '--role', 'worker'], env, dir);
    const lines = logLines(worker);
    const exited = collect(worker, timeoutMs);
    const logged = (msg: RegExp) => lines.filter((line) => typeof line.msg === 'string' && msg.test(line.msg));
    return { worker, lines, exited, logged };
  }

  it('waits, saying why, and starts once a slot frees', { timeout: 120_000 }, async () => {
    const held = await holdEverySlot(cluster!.url);
    expect(held.length).toBeGreaterThan(0);
    const { worker, lines, exited, logged } = startWorker(110_000);
    try {
      await waitFor(() => logged(/^waiting for the database/).length >= 2, 'two tries refused for want of a slot', 60_000);
      const [waiting] = logged(/^waiting for the database/);
      expect(waiting).toMatchObject({ level: 40, reason: expect.stringContaining('53300') });
      expect(waiting!.msg).toMatch(/^waiting for the database: the server has no free connection slot/);
      // It keeps waiting rather than exiting.
      expect(worker.exitCode).toBeNull();
      for (const client of held) await client.end();
      await waitFor(() => logged(/^inbox ready/).length === 1, 'the worker to start once a slot freed', 60_000);
      const [admitted] = logged(/^the database admitted the worker; starting/);
      expect(admitted?.tries).toBeGreaterThanOrEqual(3);
      // In this order: refused, admitted, ready.
      const order = lines
        .map((line) => String(line.msg))
        .filter((msg) => /^(waiting for the database|the database admitted|inbox ready)/.test(msg));
      expect(order.at(-1)).toMatch(/^inbox ready/);
      expect(order.at(-2)).toMatch(/^the database admitted/);
      // Started whole (its /healthz listens), so that SIGTERM meets its shutdown.
      await waitFor(() => logged(/is receiving webhooks/).length === 1, 'the worker to listen for /healthz', 60_000);
    } catch (err) {
      worker.kill('SIGKILL');
      const { stdout, stderr } = await exited;
      throw new Error(`${String(err)}\nstdout:\n${stdout}\nstderr:\n${stderr}`, { cause: err });
    }
    worker.kill('SIGTERM');
    const { code, stdout, stderr } = await exited;
    expect(stderr, `stdout:\n${stdout}`).not.toMatch(/too many clients/);
    expect(code, `stdout:\n${stdout}\nstderr:\n${stderr}`).toBe(0);
  });

  it('stops with exit code 0 on a SIGTERM while it waits, without starting', { timeout: 120_000 }, async () => {
    const held = await holdEverySlot(cluster!.url);
    const { worker, exited, logged } = startWorker(60_000);
    try {
      await waitFor(() => logged(/^waiting for the database/).length >= 1, 'a try refused for want of a slot', 60_000);
      // A signal before the service runs used to take its default action: killed, no exit code.
      worker.kill('SIGTERM');
      const { code, stdout, stderr } = await exited;
      expect(code, `stdout:\n${stdout}\nstderr:\n${stderr}`).toBe(0);
      expect(logged(/^stopped before the service started/)).toHaveLength(1);
      expect(logged(/^inbox ready/)).toHaveLength(0);
    } finally {
      worker.kill('SIGKILL');
      for (const client of held) await client.end();
    }
  });
});
