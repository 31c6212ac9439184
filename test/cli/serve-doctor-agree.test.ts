// serve and doctor read one configuration through one resolution (resolveServiceConfig), so they refuse the same bad
// configurations for the same named reason: each case below is fed to both, through the CLI's run() in this process
// (the exit code it returns is the process's; test/cli/cli.test.ts checks that as a process).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runInProcess } from '../helpers/cli.js';

// Every variable serve reads, blank (which counts as unset), so the machine's own environment never leaks in.
const UNSET = {
  DATABASE_URL: '',
  PAYHOOKS_DATA_DIR: '',
  PAYHOOKS_SCHEMA: '',
  PAYHOOKS_WEBHOOK_SECRET: '',
  PAYHOOKS_API_KEY: '',
  PAYHOOKS_API_URL: '',
  PAYHOOKS_ADMIN_TOKEN: '',
  PAYHOOKS_CONFIG: '',
  PAYHOOKS_MIRROR_SCHEMA: '',
  PAYHOOKS_APP_MIGRATIONS: '',
  PAYHOOKS_APP_SCHEMA: '',
  PAYHOOKS_WORKER_CONCURRENCY: '',
  PAYHOOKS_MAX_ATTEMPTS: '',
  PAYHOOKS_HANDLER_TIMEOUT_MS: '',
  PAYHOOKS_STOP_TIMEOUT_MS: '',
  HOST: '127.0.0.1',
  PORT: '0',
};
const SECRET = { PAYHOOKS_WEBHOOK_SECRET: 'agree-secret' };

interface BadConfiguration {
  title: string;
  env: Record<string, string>;
  /** The configuration file (payhooks.config.json), if any. */
  file?: unknown;
  /** What both must say. */
  reason: string;
}

const BAD: BadConfiguration[] = [
  {
    title: 'a bad variable',
    env: { ...SECRET, PORT: '99999' },
    reason: 'PORT must be a number from 0 to 65535 (0: any free port), not "99999"',
  },
  {
    title: 'a bad worker variable',
    env: { ...SECRET, PAYHOOKS_MAX_ATTEMPTS: '0' },
    reason: 'PAYHOOKS_MAX_ATTEMPTS must be a whole number of at least 1, not 0',
  },
  { title: 'no secret and no simulator session', env: {}, reason: 'PAYHOOKS_WEBHOOK_SECRET is not set' },
  {
    title: 'a weak console token',
    env: { ...SECRET, PAYHOOKS_ADMIN_TOKEN: 'changeme' },
    reason: 'PAYHOOKS_ADMIN_TOKEN is too weak: it has 8 characters',
  },
  { title: 'an API key without its URL', env: { ...SECRET, PAYHOOKS_API_KEY: 'sk_test_agree' }, reason: 'PAYHOOKS_API_URL is not set' },
  {
    title: 'a publishable key',
    env: { ...SECRET, PAYHOOKS_API_KEY: 'pk_test_agree', PAYHOOKS_API_URL: 'http://127.0.0.1:9' },
    reason: 'PAYHOOKS_API_KEY is refused by the API client: apiKey must be a secret key starting with sk_',
  },
  {
    title: 'a bad key of the file',
    env: SECRET,
    file: { mirror: { schema: 'Bad-Name' } },
    reason: 'mirror.schema: expected a schema name',
  },
  { title: 'an unknown key of the file', env: SECRET, file: { retries: 3 }, reason: 'Unrecognized key: "retries"' },
  {
    title: 'a bad worker key',
    env: SECRET,
    file: { worker: { concurrency: 0 } },
    reason: 'worker.concurrency: must be a whole number of at least 1, not 0',
  },
  {
    title: 'a ledger kept shorter than the retry horizon',
    env: SECRET,
    file: { history: { retention: { history: '1d', ledger: '2d' } } },
    reason: "history.retention.ledger: retention.ledger must be at least the sender's retry horizon (4d7h)",
  },
  {
    title: "a bad threshold in serve's alarms",
    env: SECRET,
    file: { alarms: { backlog: { maxAgeMs: -5 } } },
    reason: 'alarms.backlog.maxAgeMs',
  },
  {
    title: 'a worker variable that breaks the file',
    env: { ...SECRET, PAYHOOKS_HANDLER_TIMEOUT_MS: '90000' },
    file: { worker: { leaseMs: 60_000 } },
    reason: 'leaseMs (60000) must be longer than handlerTimeoutMs (90000)',
  },
  {
    title: 'a bad sink',
    env: SECRET,
    file: { forward: [{ name: 'erp', url: 'ftp://erp.example', secret: 'forward-secret' }] },
    reason: 'forward.0.url: expected an http:// or https:// URL',
  },
  { title: 'an unknown broker kind', env: SECRET, file: { brokers: [{ kind: 'kafka', url: 'x' }] }, reason: 'brokers.0.kind' },
];

describe('serve and doctor refuse the same bad configurations', () => {
  it.each(BAD)('$title: both exit 1 saying "$reason"', { timeout: 60_000 }, async ({ env, file, reason }) => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-agree-'));
    if (file !== undefined) writeFileSync(join(dir, 'payhooks.config.json'), JSON.stringify(file));
    // One after the other: each sets the environment and the working directory of this process while it runs.
    const serve = await runInProcess(['serve'], { ...UNSET, ...env }, dir);
    const doctor = await runInProcess(['doctor'], { ...UNSET, ...env }, dir);
    expect(serve.code, serve.stderr).toBe(1);
    expect(serve.stderr).toContain(reason);
    expect(serve.stdout).not.toContain('payhooks is receiving webhooks');
    expect(doctor.code, doctor.stdout).toBe(1);
    const failures = doctor.stdout.split('\n').filter((line) => line.startsWith('FAIL'));
    expect(failures.join('\n')).toContain(reason);
  });
});
