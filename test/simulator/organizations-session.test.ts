import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forwardOrganizations, forwardUrlFor, simulateOptionParsers } from '../../src/cli/simulate-command.js';
import { type HeadlessInfo, headlessLine } from '../../src/cli/simulate-headless.js';
import { runTrigger } from '../../src/cli/trigger-command.js';
import { EVENT_TYPES } from '../../src/events/index.js';
import { readServiceEnv } from '../../src/service/environment.js';
import {
  simulatorSessionAccounts,
  withSimulatorSession,
  withSimulatorSessionAccounts,
  withSimulatorSessionApi,
} from '../../src/service/session-env.js';
import { probeSessionAccounts, readSimulatorSession, sessionAccounts, type SimulatorSession } from '../../src/service/simulator-session.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { listen } from '../helpers/servers.js';

// The command line's side of several organizations: where each one's deliveries go, the session file that lists
// them, what serve takes from it, and `trigger --account`.

/** No PAYHOOKS_API_* or secret in the environment: the session file decides. */
const NO_ENV = { PAYHOOKS_API_KEY: undefined, PAYHOOKS_API_URL: undefined, PAYHOOKS_WEBHOOK_SECRET: undefined };

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

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

describe('--accounts and --forward-to', () => {
  it('appends the account id to the URL with several organizations, fills {account}, and keeps one as it is', () => {
    expect(forwardUrlFor('http://127.0.0.1:8787/webhooks', 'acct_2', 3)).toBe('http://127.0.0.1:8787/webhooks/acct_2');
    expect(forwardUrlFor('http://127.0.0.1:8787/webhooks/', 'gym', 2)).toBe('http://127.0.0.1:8787/webhooks/gym');
    expect(forwardUrlFor('http://127.0.0.1:8787/hooks/{account}/in', 'gym', 2)).toBe('http://127.0.0.1:8787/hooks/gym/in');
    expect(forwardUrlFor('http://127.0.0.1:8787/webhooks', 'default', 1)).toBe('http://127.0.0.1:8787/webhooks');
    expect(simulateOptionParsers.forwardTo('http://127.0.0.1:8787/hooks/{account}')).toBe('http://127.0.0.1:8787/hooks/{account}');
  });

  it('--accounts takes a count or ids, and refuses anything else naming the flag', () => {
    expect(simulateOptionParsers.accounts('3')).toBe(3);
    expect(simulateOptionParsers.accounts('gym, school')).toEqual(['gym', 'school']);
    expect(() => simulateOptionParsers.accounts('0')).toThrow(/^--accounts takes a number of organizations .*from 1 to 1000/);
    expect(() => simulateOptionParsers.accounts('Gym,gym')).toThrow(/^--accounts takes .*not "Gym"/);
    expect(() => simulateOptionParsers.accounts('a,a')).toThrow(/repeated: a/);
  });
});

describe('a session of three organizations', () => {
  let simulator: Simulator;
  let received: Received[];
  let closeReceiver: () => Promise<void>;
  let receiverUrl: string;
  let dir: string;
  let session: SimulatorSession;

  beforeAll(async () => {
    received = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
      });
    });
    ({ url: receiverUrl, close: closeReceiver } = await listen(server));
    simulator = await startSimulator({ accounts: 3 });
    dir = mkdtempSync(join(tmpdir(), 'payhooks-accounts-'));
    session = await forwardOrganizations(simulator, `${receiverUrl}/webhooks`, EVENT_TYPES, join(dir, '.payhooks'));
  });
  afterAll(async () => {
    await simulator?.close();
    await closeReceiver?.();
  });

  it('lists every organization: id, key, its own endpoint at /webhooks/<id>, its secret; the top level is the first', async () => {
    const file = JSON.parse(readFileSync(join(dir, '.payhooks', 'simulator.json'), 'utf8')) as SimulatorSession;
    expect(file).toEqual(session);
    expect(await readSimulatorSession(join(dir, '.payhooks'))).toEqual(session);
    const organizations = simulator.organizations();
    expect(session.accounts?.map((a) => [a.id, a.apiKey, a.forwardTo])).toEqual(
      organizations.map((o) => [o.id, o.apiKey, `${receiverUrl}/webhooks/${o.id}`]),
    );
    expect(new Set(session.accounts?.map((a) => a.secret)).size).toBe(3);
    for (const account of session.accounts!) expect(simulator.ownerOf(account.endpointId)).toBe(account.id);
    expect([session.apiKey, session.endpointId, session.secret]).toEqual([
      session.accounts![0]!.apiKey,
      session.accounts![0]!.endpointId,
      session.accounts![0]!.secret,
    ]);
  });

  it('simulate --json lists every organization by account id, with its key and endpoint', () => {
    const info = JSON.parse(headlessLine(simulator, session, undefined)) as HeadlessInfo;
    expect(info.accounts.map((a) => [a.id, a.apiKey, a.endpointId, a.secret])).toEqual(
      session.accounts!.map((a) => [a.id, a.apiKey, a.endpointId, a.secret]),
    );
    expect([info.apiKey, info.endpointId]).toEqual([session.accounts![0]!.apiKey, session.accounts![0]!.endpointId]);
  });

  it('gives serve one {id, apiKey, apiUrl, secrets} per organization, with the current secrets asked with each key', async () => {
    expect(sessionAccounts(session)).toEqual(
      session.accounts!.map((a) => ({ id: a.id, apiKey: a.apiKey, apiUrl: simulator.url, secrets: [a.secret] })),
    );
    const probe = await probeSessionAccounts(session);
    expect(probe).toEqual({ live: true, accounts: sessionAccounts(session) });
    const { logger, lines } = recordingLogger();
    expect(await simulatorSessionAccounts(logger, join(dir, '.payhooks'))).toEqual(sessionAccounts(session));
    expect(lines.map((l) => l.msg)).toEqual([
      `using the simulator session from ${join(dir, '.payhooks', 'simulator.json')}: 3 accounts (acct_1, acct_2, acct_3), secrets and API at ${simulator.url}`,
    ]);
    // One organization's endpoint given with another's key is not there: the probe says which account is stale.
    const crossed = { ...session, accounts: [{ ...session.accounts![0]!, apiKey: session.accounts![1]!.apiKey }] };
    expect(await probeSessionAccounts(crossed)).toMatchObject({
      live: false,
      reason: expect.stringMatching(/^account acct_1: .*has no endpoint/),
    });
  });

  it('a session file of one organization (without accounts) is one account, default', () => {
    const { accounts: _accounts, ...single } = session;
    expect(sessionAccounts(single)).toEqual([{ id: 'default', apiKey: session.apiKey, apiUrl: session.url, secrets: [session.secret] }]);
  });

  it('serve without accounts of its own takes one account per organization; its own secret wins over the session', async () => {
    const { logger, lines } = recordingLogger();
    const env = readServiceEnv({ PORT: new URL(receiverUrl).port });
    const setup = await withSimulatorSessionAccounts(env, logger, join(dir, '.payhooks'));
    expect(setup).toEqual({ env, accounts: sessionAccounts(session) });
    expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/: 3 accounts \(acct_1, acct_2, acct_3\)/)]);
    const withSecret = readServiceEnv({ PORT: '8787', PAYHOOKS_WEBHOOK_SECRET: 'mine' });
    expect(await withSimulatorSessionAccounts(withSecret, logger, join(dir, '.payhooks'))).toEqual({ env: withSecret, accounts: [] });
    // On another port than the endpoints: one warning that says where they go.
    const elsewhere = recordingLogger();
    await withSimulatorSessionAccounts(readServiceEnv({ PORT: '8787' }), elsewhere.logger, join(dir, '.payhooks'));
    expect(elsewhere.lines.map((l) => l.msg)).toContainEqual(
      expect.stringMatching(
        /forwards account acct_1's deliveries to .*\/webhooks\/acct_1, but serve receives them on port 8787 at \/webhooks\/acct_1: deliveries will not arrive here/,
      ),
    );
  });

  it("gives verify and backfill one organization's key: the first, or the one asked for", async () => {
    const base = { PAYHOOKS_API_KEY: undefined, PAYHOOKS_API_URL: undefined };
    const logged: string[] = [];
    const log = { info: (m: string) => logged.push(m), warn: (m: string) => logged.push(`warn: ${m}`) };
    const sessionDir = join(dir, '.payhooks');
    expect(await withSimulatorSessionApi(base, log, sessionDir)).toEqual({
      PAYHOOKS_API_KEY: session.accounts![0]!.apiKey,
      PAYHOOKS_API_URL: simulator.url,
    });
    expect(await withSimulatorSessionApi(base, log, sessionDir, 'acct_3')).toEqual({
      PAYHOOKS_API_KEY: session.accounts![2]!.apiKey,
      PAYHOOKS_API_URL: simulator.url,
    });
    expect(await withSimulatorSessionApi(base, log, sessionDir, 'acct_9')).toEqual(base);
    expect(logged).toEqual([
      expect.stringMatching(/the API at \S+ as account acct_1 \(of acct_1, acct_2, acct_3\)/),
      expect.stringMatching(/as account acct_3 \(of/),
      expect.stringMatching(
        /^warn: not using the simulator session from .*: it has no account acct_9 \(it lists acct_1, acct_2, acct_3\)\.$/,
      ),
    ]);
  });

  it("serve with accounts of its own does not take the first organization's secret, and says why", async () => {
    const { logger, lines } = recordingLogger();
    const env = readServiceEnv({ PORT: '8787' });
    expect(await withSimulatorSession(env, logger, join(dir, '.payhooks'))).toEqual(env);
    expect(lines.map((l) => l.msg)).toEqual([expect.stringMatching(/it runs 3 organizations \(acct_1, acct_2, acct_3\)/)]);
  });

  it("trigger --account runs the flow with that organization's key: its data, its endpoint", async () => {
    const result = await runTrigger('cash-payment', { account: 'acct_2' }, NO_ENV, join(dir, '.payhooks'));
    expect(result.ok).toBe(true);
    expect(result.lines.join('\n')).toContain(`, account acct_2`);
    expect(result.lines.join('\n')).toContain(`delivers them to ${receiverUrl}/webhooks/acct_2`);
    await simulator.idle();
    expect(simulator.organizations().map((o) => o.records().customers.length)).toEqual([0, 1, 0]);
    const paths = received.map((r) => r.path);
    expect(paths).toHaveLength(5);
    expect(new Set(paths)).toEqual(new Set(['/webhooks/acct_2']));

    // Without --account: the first organization.
    expect((await runTrigger('cash-payment', {}, NO_ENV, join(dir, '.payhooks'))).ok).toBe(true);
    expect(simulator.organizations().map((o) => o.records().customers.length)).toEqual([1, 1, 0]);
  });

  it('trigger --account with an id the session does not list names the ids it has', async () => {
    await expect(runTrigger('cash-payment', { account: 'acct_9' }, NO_ENV, join(dir, '.payhooks'))).rejects.toThrow(
      /No account "acct_9" in .*simulator\.json; it lists acct_1, acct_2, acct_3\./,
    );
    await expect(runTrigger('cash-payment', { account: 'acct_1' }, NO_ENV, join(dir, 'nowhere'))).rejects.toThrow(
      /--account picks an organization of the simulator session, and there is none/,
    );
  });

  it("trigger TYPE --to --account signs with that organization's secret", async () => {
    const target = `${receiverUrl}/elsewhere`;
    const result = await runTrigger('CUSTOMER_UPDATED', { to: target, account: 'acct_3' }, NO_ENV, join(dir, '.payhooks'));
    expect(result.ok).toBe(true);
    const delivery = received.find((r) => r.path === '/elsewhere')!;
    const verifyWith = (id: string) =>
      createDefaultScheme({ secrets: [session.accounts!.find((a) => a.id === id)!.secret] }).verify({
        headers: delivery.headers,
        rawBody: delivery.body,
      });
    expect(() => verifyWith('acct_3')).not.toThrow();
    expect(() => verifyWith('acct_1')).toThrow(/signature/i);
  });
});
