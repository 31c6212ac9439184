// The command line beside a running `payhooks serve` on the embedded database, which admits one process: events
// and replay go through the serve (its session file), and print what they print once it has stopped.
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readServeSession, serveSessionPath } from '../../src/cli/serve-session.js';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { collect, runCli, spawnCli, waitForLog } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'beside-serve-secret';

describe('payhooks events and replay while serve holds the embedded database', () => {
  it('events list --json, show and stats print what they print after serve stops; replay re-queues through serve', {
    timeout: 120_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-beside-'));
    const dataDir = join(dir, '.payhooks', 'pgdata');
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
      await waitFor(
        async () => {
          const listed = await runCli(['events', 'list', '--json'], {}, dir);
          return listed.code === 0 && (JSON.parse(listed.stdout) as { status: string }[]).every((e) => e.status === 'done');
        },
        'the three events done, seen through serve',
        60_000,
      );

      for (const args of [
        ['events', 'list', '--json'],
        ['events', 'list'],
        ['events', 'show', 'evt_beside_2'],
        ['events', 'stats', '--json'],
      ]) {
        const result = await runCli(args, {}, dir);
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
        beside[args.join(' ')] = result.stdout;
      }
      expect(JSON.parse(beside['events list --json']!)).toHaveLength(3);

      // Replay through serve: re-queued, and serve's worker runs it again.
      const replay = await runCli(['replay', 'evt_beside_1'], {}, dir);
      expect(replay.code, replay.stderr).toBe(0);
      expect(replay.stdout).toContain('re-queued 1 event');
      const unknown = await runCli(['replay', 'evt_nope'], {}, dir);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('not re-queued (unknown, or being processed now): evt_nope');
      await waitFor(
        async () => {
          const shown = await runCli(['events', 'show', 'evt_beside_1'], {}, dir);
          return shown.code === 0 && JSON.parse(shown.stdout).status === 'done';
        },
        'the replayed event done again',
        60_000,
      );
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
    const after = await runCli(['events', 'list', '--json'], {}, dir);
    const withoutReplayed = (text: string) => (JSON.parse(text) as { eventId: string }[]).filter((e) => e.eventId !== 'evt_beside_1');
    expect(withoutReplayed(after.stdout)).toEqual(withoutReplayed(beside['events list --json']!));
    expect((await runCli(['events', 'show', 'evt_beside_2'], {}, dir)).stdout).toBe(beside['events show evt_beside_2']);
    expect((await runCli(['events', 'stats', '--json'], {}, dir)).stdout).toBe(beside['events stats --json']);
    const table = (await runCli(['events', 'list'], {}, dir)).stdout;
    expect(table.split('\n').filter((line) => line.includes('evt_beside_2'))).toEqual(
      beside['events list']!.split('\n').filter((line) => line.includes('evt_beside_2')),
    );
  });
});
