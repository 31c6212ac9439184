// No request may stop `payhooks serve`, whatever its route: a client that sends part of a body and then resets the
// connection (ECONNRESET) must leave the process running, on either database, with the console on or off, with or
// without a token that opens the route (an authenticated request reads its body; an unauthenticated one must not).
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { readServeSession } from '../../src/service/serve-session.js';
import { openDatabase } from '../../src/store/database.js';
import { collect, spawnCli, waitForLog } from '../helpers/cli.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

/** Every route serve answers, plus two it does not (one under the console's prefix). */
const PATHS = [
  '/webhooks',
  '/admin',
  '/admin/api/events',
  '/admin/api/events/evt_abort',
  '/admin/api/events/evt_abort/replay',
  '/admin/api/events/evt_abort/effects/resolve',
  '/admin/api/replay',
  '/admin/api/no-such-route',
  '/admin/api/stats',
  '/admin/api/quarantine',
  '/admin/api/quarantine/1',
  '/admin/api/quarantine/1/release',
  '/admin/api/quarantine/1/discard',
  '/admin/api/health',
  '/admin/api/verify',
  '/healthz',
  '/readyz',
  '/metrics',
  '/no/such/path',
];

/**
 * Sends a request head announcing 1000 bytes of body, a few of them, then resets the connection (a TCP RST, as a
 * client that crashes or a middlebox that drops it mid-upload).
 */
async function abortMidBody(port: number, method: string, path: string, authorization: string | undefined): Promise<void> {
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const head = [
    `${method} ${path} HTTP/1.1`,
    'Host: 127.0.0.1',
    'Content-Type: application/json',
    'Content-Length: 1000',
    ...(authorization ? [`Authorization: ${authorization}`] : []),
    '',
    '',
  ].join('\r\n');
  socket.write(`${head}{"op":"listEvents","args":[{"sta`);
  // Long enough for serve to route the request and start reading its body.
  await pause(60);
  socket.resetAndDestroy();
  await new Promise((resolve) => socket.once('close', resolve));
}

const SECRET = 'aborted-requests-secret';

async function sweep(database: { DATABASE_URL: string } & Record<string, string>, adminToken: string | undefined) {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-abort-'));
  const dataDir = database.DATABASE_URL === '' ? seedDefaultDataDir(dir) : undefined;
  const env = { PAYHOOKS_WEBHOOK_SECRET: SECRET, PORT: '0', HOST: '127.0.0.1', PAYHOOKS_ADMIN_TOKEN: adminToken, ...database };
  const serve = spawnCli(['serve'], env, dir);
  const done = collect(serve, 110_000);
  try {
    const url = String((await waitForLog(serve, /receiving webhooks/, 60_000)).url);
    const base = url.replace(/\/webhooks$/, '');
    const port = Number(new URL(base).port);
    // Each token that opens something here, and none at all.
    const localToken = dataDir ? readServeSession(dataDir)?.token : undefined;
    if (dataDir) expect(localToken, 'serve on the embedded database writes its session file').toBeDefined();
    const authorizations = [undefined, adminToken, localToken].filter((a, i) => i === 0 || a !== undefined);
    let sent = 0;
    for (const path of PATHS) {
      for (const method of ['POST', 'GET']) {
        for (const token of authorizations) {
          await abortMidBody(port, method, path, token === undefined ? undefined : `Bearer ${token}`);
          sent += 1;
          // A crash shows within milliseconds; name the request that caused it.
          const what = `${method} ${path} ${token === undefined ? 'without a token' : token === adminToken ? 'with the console token' : 'with the local token'}`;
          const health = await fetch(`${base}/healthz`).then(
            (r) => r.status,
            (err: Error) => `refused (${err.message})`,
          );
          expect(health, `/healthz after an aborted ${what}`).toBe(200);
        }
      }
    }
    expect(sent).toBe(PATHS.length * 2 * authorizations.length);
    await pause(200);
    expect(serve.exitCode).toBeNull();
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
  } finally {
    serve.kill('SIGTERM');
  }
  const result = await done;
  expect(result.stdout + result.stderr).not.toMatch(/ECONNRESET|unhandled|uncaught/i);
  expect(result.code).toBe(0);
}

const consoleToken = randomBytes(32).toString('base64url');

// The two sweeps of each database run at once (it.concurrent): each has a serve, a folder and schemas of its own, and
// a sweep is mostly the pauses between its requests, one after the other so that a crash names its request.
describe('payhooks serve outlives requests reset mid-body, on every route', () => {
  it.concurrent("embedded database, console off (only the command line's session routes)", { timeout: 120_000 }, () =>
    sweep({ DATABASE_URL: '' }, undefined),
  );
  it.concurrent('embedded database, console on', { timeout: 120_000 }, () => sweep({ DATABASE_URL: '' }, consoleToken));

  describe.skipIf(!pgUrl)('PostgreSQL', () => {
    const database = () => ({
      DATABASE_URL: pgUrl!,
      PAYHOOKS_SCHEMA: uniqueSchema('abort'),
      PAYHOOKS_MIRROR_SCHEMA: uniqueSchema('abort_mirror'),
    });
    const databases = [database(), database()] as const;
    afterAll(async () => {
      for (const { PAYHOOKS_SCHEMA, PAYHOOKS_MIRROR_SCHEMA } of databases)
        for (const schema of [PAYHOOKS_SCHEMA, PAYHOOKS_MIRROR_SCHEMA]) await dispose(await openDatabase({ url: pgUrl!, schema }));
    });
    it.concurrent('console off', { timeout: 120_000 }, () => sweep(databases[0], undefined));
    it.concurrent('console on', { timeout: 120_000 }, () => sweep(databases[1], consoleToken));
  });
});
