// The command line's parsing and printing, driven in-process through `run()` (as bin/payhooks.js runs it, minus
// the exit): no process per case. test/cli/cli.test.ts keeps a spawned run for the exit code and piped output.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { oldestPendingLine } from '../../src/cli/events-command.js';
import { runInProcess } from '../helpers/cli.js';

describe('command-line errors', () => {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-cli-'));

  it.each([
    [['serve'], { PAYHOOKS_WEBHOOK_SECRET: undefined }, /PAYHOOKS_WEBHOOK_SECRET is not set/],
    [['serve'], { PAYHOOKS_WEBHOOK_SECRET: 's', PORT: 'eighty' }, /PORT must be a number/],
    [
      ['serve'],
      { PAYHOOKS_WEBHOOK_SECRET: 's', PAYHOOKS_API_KEY: 'pk_live_123', PAYHOOKS_API_URL: 'http://127.0.0.1:1' },
      /apiKey must be a secret key starting with sk_/,
    ],
    [['serve'], { PAYHOOKS_WEBHOOK_SECRET: 's', PAYHOOKS_API_KEY: 'sk_test_123', PAYHOOKS_API_URL: undefined }, /PAYHOOKS_API_URL/],
    [['prune', '--older-than', 'soon'], {}, /Invalid duration "soon"/],
    [['replay'], {}, /Name event ids to replay, or pass --status/],
    [['events', 'list', '--status', 'lost'], {}, /Allowed choices are pending, processing, done, dead, ignored, invalid/],
    [['nonsense'], {}, /unknown command 'nonsense'/],
    [['replay', 'evt_1', '--status', 'dead'], {}, /Give either event ids or --status, not both/],
    [['replay', '--status', 'dead', '--batch-size', '0'], {}, /--batch-size takes a positive whole number, not "0"/],
    [['events', 'list'], { PAYHOOKS_SCHEMA: 'Bad-Schema' }, /PAYHOOKS_SCHEMA must be a schema name/],
    [
      ['serve'],
      { PAYHOOKS_WEBHOOK_SECRET: 's', PORT: '99999', PAYHOOKS_LOG_LEVEL: 'chatty' },
      /Invalid environment:\n {2}- PORT must be a number from 0 to 65535 \(0: any free port\), not "99999"\n {2}- PAYHOOKS_LOG_LEVEL must be one of/,
    ],
  ] as const)('payhooks %j fails clearly', async (args, env, message) => {
    const result = await runInProcess([...args], { DATABASE_URL: '', PAYHOOKS_DATA_DIR: join(dir, 'pgdata'), ...env });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(message);
  });

  it('--version prints the version of package.json', async () => {
    const { version } = (await import('../../package.json', { with: { type: 'json' } })).default;
    expect(await runInProcess(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('--help lists the commands and the environment', async () => {
    const result = await runInProcess(['--help']);
    expect(result.code).toBe(0);
    for (const word of ['serve', 'migrate', 'events', 'replay', 'prune', 'PAYHOOKS_WEBHOOK_SECRET', 'DATABASE_URL'])
      expect(result.stdout).toContain(word);
  });
});

describe("events stats' oldest-pending line", () => {
  const oldest = {
    account: 'default',
    eventId: 'evt_1',
    receivedAt: new Date('2026-05-01T09:12:44.120Z'),
    ageMs: 3 * 3_600_000 + 12 * 60_000,
  };

  it('names the queued events of its resource when there are others, and nothing more when it is alone or has no key', () => {
    expect(oldestPendingLine({ ...oldest, resourceKey: 'invoice:inv_1', queuedForResource: 1950 })).toBe(
      'oldest pending event: evt_1, received 2026-05-01T09:12:44.120Z (3h 12m ago), one of 1950 queued events of invoice:inv_1 (they run one at a time)',
    );
    const alone = 'oldest pending event: evt_1, received 2026-05-01T09:12:44.120Z (3h 12m ago)';
    expect(oldestPendingLine({ ...oldest, resourceKey: 'invoice:inv_1', queuedForResource: 1 })).toBe(alone);
    expect(oldestPendingLine({ ...oldest, resourceKey: null, queuedForResource: 1 })).toBe(alone);
  });
});
