// `payhooks serve` takes the worker's options from the configuration file's `worker` key: a handler that always
// throws is dead after exactly `maxAttempts` attempts, spaced by the file's backoff (not the 1 s default), on the
// embedded database (worker in serve's process) and on PostgreSQL (worker in its child process).
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { openDatabase } from '../../src/store/database.js';
import { WORKER_DEFAULTS } from '../../src/worker/defaults.js';
import { collect, logLines, runCli, spawnCli } from '../helpers/cli.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { waitFor } from '../helpers/wait.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

const SECRET = 'worker-options-secret';
const failingHandlers = fileURLToPath(new URL('../fixtures/failing-handlers.mjs', import.meta.url));
const WORKER = { concurrency: 2, maxAttempts: 3, pollIntervalMs: 50, backoff: { baseMs: 200, maxMs: 400 } };
const EVENT_IDS = ['evt_opts_1', 'evt_opts_2'];

/**
 * Runs serve with the configuration above and the always-failing handler, sends two events, and returns, per
 * event, its final status and attempts (`events list --json`) and the times its handler was called.
 */
async function runFailingEvents(env: Record<string, string>): Promise<{
  events: { eventId: string; status: string; attempts: number }[];
  calls: Map<string, number[]>;
  lines: Record<string, unknown>[];
  serve: ChildProcess;
}> {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-worker-options-'));
  if (env.DATABASE_URL === '') seedDefaultDataDir(dir);
  writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify({ worker: WORKER }));
  const attemptsFile = join(dir, 'attempts.txt');
  const fullEnv = { ...env, PAYHOOKS_WEBHOOK_SECRET: SECRET, PORT: '0', HOST: '127.0.0.1', PAYHOOKS_TEST_ATTEMPTS_FILE: attemptsFile };
  const serve = spawnCli(['serve', '--handlers', failingHandlers], fullEnv, dir);
  const served = collect(serve, 110_000);
  const lines = logLines(serve);
  let exited = false;
  serve.once('exit', () => {
    exited = true;
  });
  const listed = async () => {
    const result = await runCli(['events', 'list', '--json'], env, dir);
    return result.code === 0 ? (JSON.parse(result.stdout) as { eventId: string; status: string; attempts: number }[]) : [];
  };
  try {
    const receiving = () => lines.find((l) => l.pid === serve.pid && l.msg === 'payhooks is receiving webhooks');
    await waitFor(() => receiving() !== undefined || exited, 'serve to listen', 60_000);
    if (!receiving()) throw new Error(`serve stopped at start: ${(await served).stderr}`);
    const url = String(receiving()?.url);
    for (const eventId of EVENT_IDS) {
      expect((await fetch(url, signedRequest(exampleEvent('CUSTOMER_CREATED', { eventId }), { secret: SECRET }))).status).toBe(200);
    }
    await waitFor(async () => (await listed()).filter((e) => e.status === 'dead').length === EVENT_IDS.length, 'both events dead', 60_000);
  } finally {
    serve.kill('SIGTERM');
  }
  const exit = await served;
  expect(exit.code, exit.stderr).toBe(0);
  const calls = new Map<string, number[]>();
  for (const line of existsSync(attemptsFile) ? readFileSync(attemptsFile, 'utf8').trim().split('\n') : []) {
    const [eventId, at] = line.split(' ');
    calls.set(eventId!, [...(calls.get(eventId!) ?? []), Number(at)]);
  }
  return { events: await listed(), calls, lines, serve };
}

/** What the file's settings require of each event: dead after exactly 3 attempts, spaced as its backoff says. */
function expectTheFileSchedule(result: Awaited<ReturnType<typeof runFailingEvents>>): void {
  expect(result.events.map((e) => [e.eventId, e.status, e.attempts]).sort()).toEqual(EVENT_IDS.map((id) => [id, 'dead', 3]));
  for (const eventId of EVENT_IDS) {
    const times = result.calls.get(eventId) ?? [];
    expect(times, `handler calls of ${eventId}`).toHaveLength(3);
    const gaps = times.slice(1).map((at, i) => at - times[i]!);
    // The delay before attempt n+1 is min(maxMs, baseMs · 2^(n−1)) times a factor in [0.5, 1): at least 100 ms,
    // then 200 ms (capped by maxMs). The default backoff (1 s base) would take 500 + 1000 ms at least for the two.
    expect(gaps[0], `gaps ${gaps}`).toBeGreaterThanOrEqual(WORKER.backoff.baseMs / 2);
    expect(gaps[1], `gaps ${gaps}`).toBeGreaterThanOrEqual(WORKER.backoff.maxMs / 2);
    // And at most the schedule's delay (200 ms, then 400 ms), plus a tolerance for the poll (50 ms), the claim, the
    // outcome's write and a loaded machine: far below the next step of the schedule were it not capped.
    const TOLERANCE_MS = 750;
    expect(gaps[0], `gaps ${gaps}`).toBeLessThan(WORKER.backoff.baseMs + TOLERANCE_MS);
    expect(gaps[1], `gaps ${gaps}`).toBeLessThan(WORKER.backoff.maxMs + TOLERANCE_MS);
    const defaultLowerBound = (WORKER_DEFAULTS.backoff.baseMs / 2) * (1 + 2);
    expect(gaps[0]! + gaps[1]!, `gaps ${gaps}`).toBeLessThan(defaultLowerBound);
  }
}

describe('payhooks serve with a worker key in the configuration file', () => {
  it('on the embedded database: dead after exactly worker.maxAttempts attempts, at the file backoff', { timeout: 120_000 }, async () => {
    const result = await runFailingEvents({ DATABASE_URL: '' });
    expectTheFileSchedule(result);
    const running = result.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('running:'));
    expect(running).toMatchObject({ concurrency: 2, maxAttempts: 3, backoff: WORKER.backoff });
    expect(running?.msg).toContain('2 at once, up to 3 attempts each');
  });

  it.skipIf(!pgUrl)('on PostgreSQL: the worker child runs with the same settings', { timeout: 120_000 }, async () => {
    const schema = uniqueSchema('worker_opts');
    try {
      const result = await runFailingEvents({ DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema });
      expectTheFileSchedule(result);
      // The handlers ran in the child (another pid), which read the same file.
      const running = result.lines.find((l) => typeof l.msg === 'string' && l.msg.startsWith('running:'));
      expect(running?.pid).not.toBe(result.serve.pid);
      expect(running).toMatchObject({ concurrency: 2, maxAttempts: 3 });
    } finally {
      const store = await openDatabase({ url: pgUrl!, schema });
      await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
      await store.close();
    }
  });
});
