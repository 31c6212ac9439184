// The command line beside a running `payhooks serve` on the embedded database, which admits one process: events
// and replay go through the serve (its session file), and print what they print once it has stopped. serve runs as a
// process; the commands through the CLI's run() in this one (the same commands as processes, exit codes included: test/cli/piped-output.test.ts).
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { readServeSession, serveSessionPath } from '../../src/service/serve-session.js';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { collect, libraryEntry, runInProcess, spawnCli, waitForLog } from '../helpers/cli.js';
import { serveAdmin } from '../helpers/serve-admin.js';
import { waitFor } from '../helpers/wait.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

const SECRET = 'beside-serve-secret';
// Fails every CUSTOMER_CREATED; with one attempt allowed, each goes dead at once.
const deadLetterHandlers = fileURLToPath(new URL('../fixtures/dead-letter-handlers.mjs', import.meta.url));

/**
 * Runs each command beside serve, each expected to exit 0; keeps what each printed under its words. The commands run in
 * this process, through the CLI's run() (serve is the process here), one at a time: each sets the working directory.
 */
async function readBeside(dir: string, beside: Record<string, string>, commands: string[][]): Promise<void> {
  const results = [];
  for (const args of commands) results.push(await runInProcess(args, {}, dir));
  for (const [i, args] of commands.entries()) {
    const result = results[i]!;
    expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
    beside[args.join(' ')] = result.stdout;
  }
}

describe('payhooks events and replay while serve holds the embedded database', () => {
  it('events list --json, show and stats print what they print after serve stops; replay re-queues through serve', {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-beside-'));
    const dataDir = seedDefaultDataDir(dir);
    const env = { PAYHOOKS_WEBHOOK_SECRET: SECRET, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '' };
    const serve = spawnCli(['serve'], env, dir);
    const served = collect(serve, 110_000);
    const beside: Record<string, string> = {};
    try {
      const url = String((await waitForLog(serve, /receiving webhooks/)).url);
      for (const [type, id] of [
        ['CUSTOMER_CREATED', 'evt_beside_1'],
        ['INVOICE_PAID', 'evt_beside_2'],
        ['PAYMENT_COMPLETED', 'evt_beside_3'],
      ] as const) {
        const delivery = signedRequest(exampleEvent(type, { eventId: id }), { secret: SECRET });
        expect((await fetch(url, delivery)).status).toBe(200);
        if (id === 'evt_beside_2') expect((await fetch(url, delivery)).status).toBe(200);
      }
      // The session file: where serve answers and the local token, readable by this user only.
      const session = readServeSession(dataDir);
      expect(session).toMatchObject({ pid: expect.any(Number), url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/) });
      expect(statSync(serveSessionPath(dataDir)).mode & 0o777).toBe(0o600);
      const api = serveAdmin(dataDir);
      await waitFor(() => api.all('done', 3), 'the three events done, seen through serve', 60_000);

      // At once: through serve, the commands do not wait for each other (only the embedded database itself admits one).
      await readBeside(dir, beside, [
        ['events', 'list', '--json'],
        ['events', 'list'],
        ['events', 'show', 'evt_beside_2'],
        ['events', 'stats', '--json'],
      ]);
      expect(JSON.parse(beside['events list --json']!)).toHaveLength(3);

      // Replay through serve: re-queued, and serve's worker runs it again.
      const replay = await runInProcess(['replay', 'evt_beside_1'], {}, dir);
      expect(replay.code, replay.stderr).toBe(0);
      expect(replay.stdout).toContain('re-queued 1 event');
      const unknown = await runInProcess(['replay', 'evt_nope'], {}, dir);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('not re-queued (unknown, or being processed now): evt_nope');
      await waitFor(async () => (await api.event('evt_beside_1'))?.status === 'done', 'the replayed event done again', 60_000);
      const shown = await runInProcess(['events', 'show', 'evt_beside_1'], {}, dir);
      expect(shown.code, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout).status).toBe('done');
      // A console request from this machine without the local token gets nothing: the console itself is off.
      expect(
        (await fetch(`${session!.url}/admin/api/events`, { headers: { authorization: 'Bearer not-the-token-0123456789abcdef0123' } }))
          .status,
      ).toBe(404);
    } finally {
      serve.kill('SIGTERM');
    }
    expect((await served).code).toBe(0);
    expect(existsSync(serveSessionPath(dataDir))).toBe(false);

    // After serve: the same commands, on the database itself, print the same (the replayed event aside).
    const after = await runInProcess(['events', 'list', '--json'], {}, dir);
    const withoutReplayed = (text: string) => (JSON.parse(text) as { eventId: string }[]).filter((e) => e.eventId !== 'evt_beside_1');
    expect(withoutReplayed(after.stdout)).toEqual(withoutReplayed(beside['events list --json']!));
    expect((await runInProcess(['events', 'show', 'evt_beside_2'], {}, dir)).stdout).toBe(beside['events show evt_beside_2']);
    expect((await runInProcess(['events', 'stats', '--json'], {}, dir)).stdout).toBe(beside['events stats --json']);
    const table = (await runInProcess(['events', 'list'], {}, dir)).stdout;
    expect(table.split('\n').filter((line) => line.includes('evt_beside_2'))).toEqual(
      beside['events list']!.split('\n').filter((line) => line.includes('evt_beside_2')),
    );
  });

  it('replay --status dead beside serve previews, then re-queues in batches with progress, and prints as without serve', {
    timeout: 150_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-beside-replay-'));
    const dataDir = seedDefaultDataDir(dir);
    const env = { PAYHOOKS_WEBHOOK_SECRET: SECRET, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '' };
    const serve = spawnCli(['serve', '--handlers', deadLetterHandlers], { ...env, PAYHOOKS_TEST_ENTRY: libraryEntry().entry }, dir);
    const served = collect(serve, 140_000);
    const ids = ['evt_dead_1', 'evt_dead_2', 'evt_dead_3'];
    const beside: Record<string, string> = {};
    try {
      const url = String((await waitForLog(serve, /receiving webhooks/)).url);
      // A customer each: the worker runs one resource's events one at a time, and their order is not the subject.
      for (const [i, eventId] of ids.entries()) {
        const event = exampleEvent('CUSTOMER_CREATED', { eventId, data: { id: `cus_dead_${i + 1}` } });
        expect((await fetch(url, signedRequest(event, { secret: SECRET }))).status).toBe(200);
      }
      const api = serveAdmin(dataDir);
      const allDead = () => api.all('dead', 3);
      await waitFor(allDead, 'the three events dead, seen through serve', 60_000);

      const dryRun = await runInProcess(['replay', '--status', 'dead', '--dry-run'], {}, dir);
      expect(dryRun.stdout.trim().split('\n')).toEqual([
        `3 events to re-queue in state dead: ${ids.join(', ')}`,
        'dry run: nothing changed',
      ]);
      const named = await runInProcess(['replay', 'evt_dead_2', 'evt_nope', '--dry-run'], {}, dir);
      expect(named.code).toBe(1);
      expect(named.stdout.trim().split('\n')).toEqual(['1 event to re-queue: evt_dead_2', 'dry run: nothing changed']);
      expect(named.stderr).toContain('not re-queued (unknown, or being processed now): evt_nope');

      const replayed = await runInProcess(['replay', '--status', 'dead', '--yes', '--batch-size', '2'], {}, dir);
      expect(replayed.code, replayed.stderr).toBe(0);
      expect(replayed.stdout.trim().split('\n')).toEqual([
        `3 events to re-queue in state dead: ${ids.join(', ')}`,
        're-queued 3 events from state dead',
      ]);
      expect(replayed.stderr.trim().split('\n')).toEqual(['re-queued 2/3 events', 're-queued 3/3 events']);
      // serve's worker runs them again, and the handler sends them back to dead.
      await waitFor(
        async () => {
          const shown = await api.event('evt_dead_1');
          return shown?.status === 'dead' && shown.processedAt !== null;
        },
        'the replayed events dead again',
        60_000,
      );
      await waitFor(allDead, 'all three dead again', 60_000);
      const shown = await runInProcess(['events', 'show', 'evt_dead_1'], {}, dir);
      expect(shown.code, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({ status: 'dead', processedAt: expect.any(String) });
      await readBeside(dir, beside, [
        ['events', 'list', '--json'],
        ['events', 'list'],
        ['events', 'show', 'evt_dead_2'],
        ['replay', '--status', 'dead', '--dry-run'],
      ]);
      // The errors as stored, the customer's email included: the command line is not the console, which masks them.
      const errors = (JSON.parse(beside['events list --json']!) as { lastError: string }[]).map((e) => e.lastError);
      expect(errors).toEqual(Array(3).fill(expect.stringMatching(/the CRM refused [^*]+@[^*]+/)));
    } finally {
      serve.kill('SIGTERM');
    }
    expect((await served).code).toBe(0);
    for (const args of [
      ['events', 'list', '--json'],
      ['events', 'list'],
      ['events', 'show', 'evt_dead_2'],
      ['replay', '--status', 'dead', '--dry-run'],
    ])
      expect((await runInProcess(args, {}, dir)).stdout, args.join(' ')).toBe(beside[args.join(' ')]);
  });
});
