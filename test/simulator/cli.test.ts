import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { collect, runCli, spawnCli } from '../helpers/cli.js';
import { listen, serverFor } from '../helpers/servers.js';

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
    const result = await runCli(['trigger', 'INVOICE_PAID', '--to', `${receiver.url}/webhooks`, '--secret', SECRET]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/HTTP 200/);
    expect(result.stdout).toContain('{"received":true}');
    const eventId = /sent INVOICE_PAID (evt_\S+)/.exec(result.stdout)?.[1];
    expect(eventId).toBeDefined();
    expect(await getEvent(store, eventId!)).toMatchObject({ eventType: 'INVOICE_PAID', status: 'pending' });
  });

  it('takes the secret from PAYHOOKS_WEBHOOK_SECRET', { timeout: 60_000 }, async () => {
    const result = await runCli(['trigger', 'CUSTOMER_CREATED', '--to', `${receiver.url}/webhooks`], {
      PAYHOOKS_WEBHOOK_SECRET: `${SECRET},older-secret`,
    });
    expect(result.code).toBe(0);
  });

  it('prints the 401 of a wrong secret and exits 1', { timeout: 60_000 }, async () => {
    const result = await runCli(['trigger', 'INVOICE_PAID', '--to', `${receiver.url}/webhooks`, '--secret', 'wrong-secret']);
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/HTTP 401/);
    expect(result.stdout).toMatch(/Invalid webhook signature/);
  });

  it.each([
    [
      ['trigger', 'INVOICE_EXPLODED', '--to', 'http://127.0.0.1:1/webhooks', '--secret', 's'],
      {},
      /Unknown event type "INVOICE_EXPLODED"\. Known types:[\s\S]*PAYMENT_COMPLETED/,
    ],
    [
      ['trigger', 'INVOICE_PAID', '--to', 'http://127.0.0.1:1/webhooks'],
      { PAYHOOKS_WEBHOOK_SECRET: undefined },
      /No signing secret: pass --secret S or set PAYHOOKS_WEBHOOK_SECRET/,
    ],
    [['trigger', 'INVOICE_PAID', '--to', 'not a url', '--secret', 's'], {}, /--to takes the receiver's URL/],
    [
      ['trigger', 'INVOICE_PAID', '--secret', 's'],
      { PAYHOOKS_API_URL: undefined },
      /No simulator to run INVOICE_PAID in: start one with payhooks simulate --forward-to[\s\S]*pass --to URL/,
    ],
    [
      ['trigger', 'INVOICE_PAID', '--to', 'http://127.0.0.1:1/webhooks', '--secret', 's'],
      {},
      /Could not deliver to http:\/\/127\.0\.0\.1:1\/webhooks: .*ECONNREFUSED/,
    ],
  ] as const)('payhooks %j fails clearly', { timeout: 60_000, concurrent: true }, async (args, env, message) => {
    const result = await runCli([...args], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
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

  it.each([
    [['simulate', '--duplicate-rate', '2'], /--duplicate-rate takes a probability between 0 and 1, not "2"/],
    [['simulate', '--fail-rate', '-0.5'], /--fail-rate takes a probability between 0 and 1/],
    [['simulate', '--time-scale', '0'], /--time-scale takes a number greater than 0/],
    [['simulate', '--port', 'http'], /--port takes a whole number from 0 to 65535/],
  ] as const)('payhooks %j fails clearly', { timeout: 60_000, concurrent: true }, async (args, message) => {
    const result = await runCli([...args]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
  });

  it('--help lists simulate and trigger', { timeout: 60_000 }, async () => {
    const result = await runCli(['--help']);
    expect(result.stdout).toMatch(/simulate \[options\]/);
    expect(result.stdout).toMatch(/trigger \[options\] <flow\|type>/);
  });
});
