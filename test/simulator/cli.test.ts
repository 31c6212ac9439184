import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSimulatorSession } from '../../src/service/simulator-session.js';
import { createClient } from '../../src/client/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { startSimulator } from '../../src/simulator/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { collect, runCli, runInProcess, spawnCli } from '../helpers/cli.js';
import { listen, serverFor } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

/** A folder holding a session file as `simulate --forward-to` writes it, for a simulator at `url`. */
async function sessionDir(url: string, secret: string, forwardTo = 'http://127.0.0.1:8787/webhooks'): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-trigger-'));
  await writeSimulatorSession(join(dir, '.payhooks'), {
    version: 1,
    url,
    apiKey: 'sk_test_local',
    endpointId: 'we_test',
    secret,
    forwardTo,
    enabledEvents: ['INVOICE_PAID'],
    pid: process.pid,
    startedAt: new Date().toISOString(),
  });
  return dir;
}

const SECRET = 'trigger-test-secret';

describe('payhooks trigger', () => {
  let store: PayhooksDatabase;
  let hooks: Payhooks;
  let receiver: { url: string; close: () => Promise<void> };
  beforeAll(async () => {
    store = await openDatabase({ dataDir: 'memory://', schema: 'trigger' });
    hooks = createPayhooks({ secret: SECRET, database: store, logger: pino({ level: 'silent' }) });
    receiver = await listen(serverFor('node', hooks));
  });
  afterAll(async () => {
    await receiver.close();
    await store.close();
  });

  it('sends a signed INVOICE_PAID that a real receiver stores, prints the answer, exits 0', { timeout: 60_000 }, async () => {
    const result = await runInProcess(['trigger', 'INVOICE_PAID', '--to', `${receiver.url}/webhooks`, '--secret', SECRET]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/HTTP 200/);
    expect(result.stdout).toContain('{"received":true}');
    const eventId = /sent INVOICE_PAID (evt_\S+)/.exec(result.stdout)?.[1];
    expect(eventId).toBeDefined();
    expect(await getEvent(store, eventId!)).toMatchObject({ eventType: 'INVOICE_PAID', status: 'pending' });
  });

  it('takes the secret from PAYHOOKS_WEBHOOK_SECRET', { timeout: 60_000 }, async () => {
    const result = await runInProcess(['trigger', 'CUSTOMER_CREATED', '--to', `${receiver.url}/webhooks`], {
      PAYHOOKS_WEBHOOK_SECRET: `${SECRET},older-secret`,
    });
    expect(result.code).toBe(0);
  });

  it('prints the 401 of a wrong secret and exits 1', { timeout: 60_000 }, async () => {
    const result = await runInProcess(['trigger', 'INVOICE_PAID', '--to', `${receiver.url}/webhooks`, '--secret', 'wrong-secret']);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/HTTP 401/);
    expect(result.stdout).toMatch(/Invalid webhook signature/);
  });

  it("with --to and no secret given, signs with the session file's secret", { timeout: 60_000 }, async () => {
    const dir = await sessionDir('http://127.0.0.1:1', SECRET);
    const result = await runInProcess(
      ['trigger', 'PAYMENT_COMPLETED', '--to', `${receiver.url}/webhooks`],
      { PAYHOOKS_WEBHOOK_SECRET: undefined },
      dir,
    );
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/HTTP 200/);
    expect(result.stdout).toContain("the catalog's example");
  });

  it('a flow with a session whose simulator has stopped says so, and how to start it again', { timeout: 60_000 }, async () => {
    const stopped = await startSimulator();
    await stopped.close();
    const dir = await sessionDir(stopped.url, 'secret', 'http://127.0.0.1:8788/webhooks');
    const result = await runInProcess(['trigger', 'dispute'], { PAYHOOKS_API_URL: undefined, PAYHOOKS_API_KEY: undefined }, dir);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain(`simulator: ${stopped.url} (from .payhooks/simulator.json)`);
    expect(result.stderr).toMatch(
      /flow dispute stopped after 0 steps[\s\S]*The simulator of \.payhooks\/simulator\.json does not answer: it has stopped\. Start it again with payhooks simulate --forward-to http:\/\/127\.0\.0\.1:8788\/webhooks\./,
    );
  });

  it('--help lists every flow with one line', { timeout: 60_000 }, async () => {
    const result = await runInProcess(['trigger', '--help']);
    expect(result.code).toBe(0);
    for (const flow of [
      'cash-payment',
      'transfer-payment',
      'mark-paid',
      'failed-attempt',
      'refund',
      'dispute',
      'subscription-cycle',
      'direct-debit',
    ])
      expect(result.stdout).toMatch(new RegExp(`^  ${flow} +\\S.+$`, 'm'));
    expect(result.stdout).toMatch(/--simulator <url>/);
    expect(result.stdout).toMatch(/--to <url>/);
  });
});

describe('payhooks simulate', () => {
  it('starts on a free port, serves /openapi.json, stops cleanly on SIGTERM', { timeout: 60_000 }, async () => {
    const child = spawnCli(['simulate', '--port', '0', '--time-scale', '60', '--duplicate-rate', '0.1', '--reorder']);
    const done = collect(child, 50_000);
    const url = await new Promise<string>((resolve, reject) => {
      let output = '';
      const timer = setTimeout(() => reject(new Error(`no URL printed; got:\n${output}`)), 30_000);
      child.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const match = /simulator listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
    });
    const document = await fetch(`${url}/openapi.json`);
    expect(document.status).toBe(200);
    expect(((await document.json()) as { info: { version: string } }).info.version).toBe('1.0.0');
    const created = await fetch(`${url}/v1/customers`, {
      method: 'POST',
      headers: { authorization: 'Bearer sk_test_cli', 'content-type': 'application/json' },
      body: JSON.stringify({ input: { username: 'cli-user' } }),
    });
    expect(created.status).toBe(200);
    child.kill('SIGTERM');
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/sk_test_/);
    expect(result.stdout).toMatch(/POST \/v1\/webhooks|\/v1\/webhooks/);
    expect(result.stdout).toMatch(/Chaos: time scale 60, duplicate rate 0\.1, reordering/);
  });

  it('on a port in use, says so and how to choose another, exit 1', { timeout: 60_000 }, async () => {
    const taken = await listen(createServer());
    try {
      const port = new URL(taken.url).port;
      const result = await runCli(['simulate', '--port', port]);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `Cannot listen on 127.0.0.1:${port}: the port is in use (another payhooks simulate?). Stop that process or pass --port.`,
      );
    } finally {
      await taken.close();
    }
  });

  it('--forward-to with --events registers only those types, and the session file lists them', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-simulate-'));
    const child = spawnCli(
      ['simulate', '--port', '0', '--forward-to', 'https://example.com/hooks', '--events', 'INVOICE_PAID, PAYMENT_COMPLETED'],
      {},
      dir,
    );
    const done = collect(child, 50_000);
    const sessionFile = join(dir, '.payhooks', 'simulator.json');
    await waitFor(() => existsSync(sessionFile), 'the session file', 30_000);
    const session = JSON.parse(readFileSync(sessionFile, 'utf8')) as { url: string; endpointId: string; enabledEvents: string[] };
    expect(session.enabledEvents).toEqual(['INVOICE_PAID', 'PAYMENT_COMPLETED']);
    const listed = await createClient({ apiKey: 'sk_test_cli', environment: session.url }).webhooks.list();
    expect(listed.data).toEqual([expect.objectContaining({ id: session.endpointId, url: 'https://example.com/hooks' })]);
    child.kill('SIGTERM');
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('Forwarding INVOICE_PAID, PAYMENT_COMPLETED to https://example.com/hooks');
    expect(result.stdout).toContain('Point your receiver at https://example.com/hooks');
    expect(existsSync(sessionFile)).toBe(false);
  });

  it('--accounts 3 --forward-to: three endpoints at /webhooks/<id>, the session lists them, trigger --account picks one', {
    timeout: 90_000,
  }, async () => {
    const paths: string[] = [];
    const receiver = await listen(
      createServer((req, res) => {
        req.resume();
        req.on('end', () => {
          paths.push(req.url ?? '');
          res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
        });
      }),
    );
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-accounts-'));
    const child = spawnCli(['simulate', '--port', '0', '--accounts', '3', '--forward-to', `${receiver.url}/webhooks`], {}, dir);
    const done = collect(child, 80_000);
    try {
      const sessionFile = join(dir, '.payhooks', 'simulator.json');
      await waitFor(() => existsSync(sessionFile), 'the session file', 30_000);
      const session = JSON.parse(readFileSync(sessionFile, 'utf8')) as {
        url: string;
        accounts: { id: string; apiKey: string; forwardTo: string }[];
      };
      expect(session.accounts.map((a) => [a.id, a.forwardTo])).toEqual(
        ['acct_1', 'acct_2', 'acct_3'].map((id) => [id, `${receiver.url}/webhooks/${id}`]),
      );
      const trigger = await runCli(
        ['trigger', 'cash-payment', '--account', 'acct_3'],
        { PAYHOOKS_API_URL: undefined, PAYHOOKS_API_KEY: undefined },
        dir,
      );
      expect(trigger.stderr).toBe('');
      expect(trigger.code).toBe(0);
      expect(trigger.stdout).toContain('account acct_3');
      await waitFor(() => paths.length >= 5, 'five deliveries', 30_000);
      expect(new Set(paths)).toEqual(new Set(['/webhooks/acct_3']));
      // acct_3's key sees its customer; acct_1's sees none.
      const customers = async (key: string) => (await createClient({ apiKey: key, environment: session.url }).customers.list()).data.length;
      expect(await customers(session.accounts[2]!.apiKey)).toBe(1);
      expect(await customers(session.accounts[0]!.apiKey)).toBe(0);
    } finally {
      child.kill('SIGTERM');
      await receiver.close();
    }
    const result = await done;
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('3 organizations, each with its own API key, endpoint and signing secret');
    for (const id of ['acct_1', 'acct_2', 'acct_3']) expect(result.stdout).toContain(`${receiver.url}/webhooks/${id}`);
    expect(existsSync(join(dir, '.payhooks', 'simulator.json'))).toBe(false);
  });

  it('--help lists simulate and trigger', { timeout: 60_000 }, async () => {
    const result = await runInProcess(['--help']);
    expect(result.stdout).toMatch(/simulate \[options\]/);
    expect(result.stdout).toMatch(/trigger \[options\] <flow\|type>/);
  });
});
