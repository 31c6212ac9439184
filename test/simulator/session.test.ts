import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceEnv } from '../../src/service/service-defaults.js';
import { readServiceEnv } from '../../src/service/environment.js';
import { withSimulatorSession, withSimulatorSessionApi } from '../../src/service/session-env.js';
import {
  probeSimulatorSession,
  readSimulatorSession,
  removeSimulatorSession,
  SimulatorSessionError,
  writeSimulatorSession,
  type SimulatorSession,
} from '../../src/service/simulator-session.js';
import { createClient } from '../../src/client/index.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';

// The session file `simulate --forward-to` writes and `serve` reads: its format and mode, and the rules of
// withSimulatorSession (the environment wins; a stopped simulator's secret is never used, and the log says so).

let simulator: Simulator;
let session: SimulatorSession;
beforeAll(async () => {
  simulator = await startSimulator();
  const client = createClient({ apiKey: 'sk_test_local', environment: simulator.url });
  const endpoint = await client.webhooks.create({
    url: 'http://127.0.0.1:8787/webhooks',
    description: 'session test',
    enabledEvents: ['INVOICE_PAID'],
  });
  session = {
    version: 1,
    url: simulator.url,
    apiKey: 'sk_test_local',
    endpointId: endpoint.id,
    secret: (await client.webhooks.getSecret(endpoint.id)).secret,
    forwardTo: endpoint.url,
    enabledEvents: endpoint.enabledEvents,
    pid: process.pid,
    startedAt: new Date().toISOString(),
  };
});
afterAll(() => simulator.close());

const newDir = () => join(mkdtempSync(join(tmpdir(), 'payhooks-session-')), '.payhooks');

/** A logger whose lines are kept, to check what serve would say. */
function recordingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(JSON.parse(String(chunk)) as { level: number; msg: string });
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const env = (overrides: Record<string, string | undefined> = {}): ServiceEnv => readServiceEnv({ PORT: '8787', ...overrides });

describe('the session file', () => {
  it('is written with mode 0600 in a folder it creates, read back as written, removed only by its own simulator', async () => {
    const dir = newDir();
    const path = await writeSimulatorSession(dir, session);
    expect(path).toBe(join(dir, 'simulator.json'));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(path, 'utf8'))).toEqual(session);
    expect(await readSimulatorSession(dir)).toEqual(session);

    await removeSimulatorSession(dir, 'we_someone_else');
    expect(await readSimulatorSession(dir)).toEqual(session);
    await removeSimulatorSession(dir, session.endpointId);
    expect(await readSimulatorSession(dir)).toBeUndefined();
  });

  it('a file that is not a session is a SimulatorSessionError naming the file and the bad fields', async () => {
    const dir = newDir();
    await writeSimulatorSession(dir, session);
    writeFileSync(join(dir, 'simulator.json'), '{not json');
    await expect(readSimulatorSession(dir)).rejects.toThrow(/^payhooks: .*simulator\.json is not JSON; delete it/);
    writeFileSync(join(dir, 'simulator.json'), JSON.stringify({ ...session, apiKey: 'sk_live_x', secret: '' }));
    const error = await readSimulatorSession(dir).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SimulatorSessionError);
    expect((error as Error).message).toMatch(/is not a simulator session \(bad or missing: apiKey, secret\)/);
    expect((error as Error).message).not.toContain(session.secret);
  });

  it('probe: live with the current secret (a rotation is followed); stale when the endpoint or the simulator is gone, or it keeps failing', async () => {
    expect(await probeSimulatorSession(session)).toEqual({ live: true, secret: session.secret });
    expect(await probeSimulatorSession({ ...session, endpointId: 'we_gone' })).toEqual({
      live: false,
      reason: `the simulator at ${simulator.url} has no endpoint we_gone (it was restarted)`,
    });
    // After a rotation the simulator's current secret is the one to verify with, not the file's.
    const other = createClient({ apiKey: 'sk_test_local', environment: simulator.url });
    const rotated = await other.webhooks.create({
      url: 'http://127.0.0.1:8787/webhooks',
      description: 'rotated',
      enabledEvents: ['INVOICE_PAID'],
    });
    const { secret: newSecret } = await other.webhooks.rotateSecret(rotated.id);
    expect(await probeSimulatorSession({ ...session, endpointId: rotated.id })).toEqual({ live: true, secret: newSecret });

    const failing = await startSimulator({ failRate: 1 });
    try {
      expect(await probeSimulatorSession({ ...session, url: failing.url })).toEqual({
        live: false,
        reason: expect.stringMatching(/^the simulator at \S+ did not give the endpoint's secret \(.*503 Simulated failure/),
      });
    } finally {
      await failing.close();
    }
    const stopped = await startSimulator();
    await stopped.close();
    expect(await probeSimulatorSession({ ...session, url: stopped.url })).toEqual({
      live: false,
      reason: `the simulator at ${stopped.url} does not answer (it has stopped)`,
    });
  });
});

describe('withSimulatorSession (what serve does at start)', () => {
  it('without PAYHOOKS_WEBHOOK_SECRET: the secret, and the simulator as the API, with one line that says so', async () => {
    const dir = newDir();
    await writeSimulatorSession(dir, session);
    const { logger, lines } = recordingLogger();
    const resolved = await withSimulatorSession(env(), logger, dir);
    expect(resolved).toMatchObject({
      PAYHOOKS_WEBHOOK_SECRET: [session.secret],
      PAYHOOKS_API_KEY: 'sk_test_local',
      PAYHOOKS_API_URL: simulator.url,
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 30,
        msg: `using the simulator session from ${dir}/simulator.json: secret and API at ${simulator.url}; set PAYHOOKS_WEBHOOK_SECRET to override`,
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain(session.secret);
  });

  it('the environment wins: a set secret leaves the file unread; a set API key or URL keeps the API', async () => {
    const dir = newDir();
    await writeSimulatorSession(dir, session);
    const { logger, lines } = recordingLogger();
    const given = env({ PAYHOOKS_WEBHOOK_SECRET: 'mine' });
    expect(await withSimulatorSession(given, logger, dir)).toBe(given);

    const withApi = await withSimulatorSession(
      env({ PAYHOOKS_API_KEY: 'sk_test_real', PAYHOOKS_API_URL: 'https://staging.example' }),
      logger,
      dir,
    );
    expect(withApi).toMatchObject({
      PAYHOOKS_WEBHOOK_SECRET: [session.secret],
      PAYHOOKS_API_KEY: 'sk_test_real',
      PAYHOOKS_API_URL: 'https://staging.example',
    });
    const urlOnly = await withSimulatorSession(env({ PAYHOOKS_API_URL: 'https://staging.example' }), logger, dir);
    expect(urlOnly.PAYHOOKS_API_KEY).toBeUndefined();
    expect(urlOnly.PAYHOOKS_API_URL).toBe('https://staging.example');
    expect(lines.map((line) => line.msg)).toEqual([
      expect.stringMatching(
        /secret of endpoint we_\S+ \(the API from PAYHOOKS_API_KEY \/ PAYHOOKS_API_URL\); set PAYHOOKS_WEBHOOK_SECRET to override$/,
      ),
      expect.stringMatching(/secret of endpoint we_\S+ \(the API from PAYHOOKS_API_KEY \/ PAYHOOKS_API_URL\)/),
    ]);
  });

  it('a stopped simulator: nothing taken from the file, and a warning that says why', async () => {
    const stopped = await startSimulator();
    await stopped.close();
    const dir = newDir();
    await writeSimulatorSession(dir, { ...session, url: stopped.url });
    const { logger, lines } = recordingLogger();
    const given = env();
    expect(await withSimulatorSession(given, logger, dir)).toEqual(given);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        msg: expect.stringMatching(
          new RegExp(
            `^not using the simulator session from .*simulator\\.json: the simulator at ${stopped.url} does not answer \\(it has stopped\\), so its secret can no longer verify anything\\. Run payhooks simulate --forward-to URL again, or set PAYHOOKS_WEBHOOK_SECRET\\.$`,
          ),
        ),
      }),
    ]);
  });

  it('a broken file is ignored with a warning; no file, no line; a forward-to on another port is pointed out', async () => {
    const { logger, lines } = recordingLogger();
    expect(await withSimulatorSession(env(), logger, newDir())).toEqual(env());
    expect(lines).toEqual([]);

    const broken = newDir();
    await writeSimulatorSession(broken, session);
    writeFileSync(join(broken, 'simulator.json'), '[]');
    expect(await withSimulatorSession(env(), logger, broken)).toEqual(env());
    expect(lines.at(-1)).toMatchObject({
      level: 40,
      msg: expect.stringMatching(/^ignoring the simulator session: .* is not a simulator session/),
    });

    const elsewhere = newDir();
    await writeSimulatorSession(elsewhere, session);
    await withSimulatorSession(env({ PORT: '9999' }), logger, elsewhere);
    expect(lines.at(-1)).toMatchObject({
      level: 40,
      msg: 'the simulator forwards to http://127.0.0.1:8787/webhooks, but serve receives on port 9999 at /webhooks: deliveries will not arrive here (start serve with PORT=8787)',
    });
  });
});

describe('withSimulatorSessionApi (what verify and backfill do before they read the API)', () => {
  it('no key and no URL: the session is the API, one line says so; either one set, or a stopped simulator: the environment as given', async () => {
    const dir = newDir();
    await writeSimulatorSession(dir, session);
    const { logger, lines } = recordingLogger();
    const given: { PAYHOOKS_MIRROR_SCHEMA: string; PAYHOOKS_API_KEY?: string; PAYHOOKS_API_URL?: string } = { PAYHOOKS_MIRROR_SCHEMA: 'm' };
    const resolved = await withSimulatorSessionApi(given, logger, dir);
    expect(resolved).toEqual({ PAYHOOKS_MIRROR_SCHEMA: 'm', PAYHOOKS_API_KEY: 'sk_test_local', PAYHOOKS_API_URL: simulator.url });
    expect(lines.map((line) => line.msg)).toEqual([
      `using the simulator session from ${dir}/simulator.json: the API at ${simulator.url}; set PAYHOOKS_API_KEY and PAYHOOKS_API_URL to override`,
    ]);
    expect(JSON.stringify(lines)).not.toContain(session.secret);

    const keyOnly = { PAYHOOKS_API_KEY: 'sk_test_mine' };
    expect(await withSimulatorSessionApi(keyOnly, logger, dir)).toBe(keyOnly);
    const urlOnly = { PAYHOOKS_API_URL: 'https://staging.example' };
    expect(await withSimulatorSessionApi(urlOnly, logger, dir)).toBe(urlOnly);
    expect(lines).toHaveLength(1);

    const stopped = await startSimulator();
    await stopped.close();
    const stale = newDir();
    await writeSimulatorSession(stale, { ...session, url: stopped.url });
    expect(await withSimulatorSessionApi({}, logger, stale)).toEqual({});
    expect(lines.at(-1)).toMatchObject({
      level: 40,
      msg: expect.stringMatching(
        /does not answer \(it has stopped\), so it is not the API any more\. .* or set PAYHOOKS_API_KEY and PAYHOOKS_API_URL\.$/,
      ),
    });
  });
});
