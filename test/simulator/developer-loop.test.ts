import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { RETRY_DELAYS_MS } from '../../src/simulator/index.js';
import { collect, runCli, spawnCli } from '../helpers/cli.js';
import { freePort } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

// The developer's loop of issue 51, with real processes: `simulate --json --clock manual --state`, `serve` (in the
// test-only mode that checks signature age against the simulated time), `trigger --override`, `send`,
// `deliveries list|resend`, `clock advance`, and a simulator restart that keeps its state.

const handlers = fileURLToPath(new URL('../fixtures/loop-handlers.mjs', import.meta.url));

const CLEAN_ENV = {
  PAYHOOKS_WEBHOOK_SECRET: undefined,
  PAYHOOKS_API_KEY: undefined,
  PAYHOOKS_API_URL: undefined,
  DATABASE_URL: '',
  PAYHOOKS_DATA_DIR: undefined,
  PAYHOOKS_TEST_SIMULATED_CLOCK: undefined,
};

function output(child: ChildProcess): () => string {
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return () => text;
}

interface Headless {
  url: string;
  apiKey: string;
  endpointId: string;
  secret: string;
  clock: string;
  accounts: { id: string; endpointId: string; secret: string }[];
}

interface InboxEvent {
  eventId: string;
  eventType: string;
  status: string;
  deliveries: number;
}

interface Delivery {
  id: string;
  eventId: string;
  eventType: string;
  status: string;
  attempts: { attemptNumber: number; attemptedAt: string; responseStatus: number | null }[];
}

describe("the developer's loop", () => {
  it('overrides, send, resend, a manual clock playing 8 retries while serve is down, and a restart with --state', {
    timeout: 300_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-loop-'));
    const [simulatorPort, servePort] = [await freePort(), await freePort()];
    const webhooks = `http://127.0.0.1:${servePort}/webhooks`;
    const stateFile = join(dir, 'simulator-state.json');
    const handledFile = join(dir, 'handled.txt');
    writeFileSync(handledFile, '');
    const children: ChildProcess[] = [];
    const simulateArgs = [
      'simulate',
      '--port',
      String(simulatorPort),
      '--forward-to',
      webhooks,
      '--clock',
      'manual',
      '--json',
      '--state',
      stateFile,
    ];
    const serveEnv = {
      ...CLEAN_ENV,
      PORT: String(servePort),
      HOST: '127.0.0.1',
      PAYHOOKS_TEST_SIMULATED_CLOCK: 'true',
      HANDLED_FILE: handledFile,
    };
    const cli = async (args: string[]) => runCli(args, CLEAN_ENV, dir, 60_000);
    const startSimulator = async () => {
      const child = spawnCli(simulateArgs, CLEAN_ENV, dir);
      children.push(child);
      const out = output(child);
      await waitFor(() => out().includes('\n'), 'simulate --json to print its line', 60_000);
      return { child, out, done: collect(child, 580_000) };
    };
    const startServe = async () => {
      const child = spawnCli(['serve', '--handlers', handlers], serveEnv, dir);
      children.push(child);
      const out = output(child);
      const done = collect(child, 580_000);
      await waitFor(() => out().includes('payhooks is receiving webhooks'), 'serve to listen', 90_000);
      return { child, out, done };
    };
    const inbox = async (): Promise<InboxEvent[]> => {
      const listed = await cli(['events', 'list', '--json']);
      expect(listed.code).toBe(0);
      return JSON.parse(listed.stdout) as InboxEvent[];
    };
    const handled = () => readFileSync(handledFile, 'utf8').split('\n').filter(Boolean);
    const reportedEvents = (stdout: string) =>
      [...stdout.matchAll(/^ {2}([A-Z_]+) +(evt_\S+)$/gm)].map((m) => ({ eventType: m[1]!, eventId: m[2]! }));
    const api = (path: string, init: RequestInit = {}) =>
      fetch(`http://127.0.0.1:${simulatorPort}${path}`, { ...init, headers: { authorization: 'Bearer sk_test_local', ...init.headers } });

    try {
      // Headless: one JSON line, nothing else on stdout.
      const simulator = await startSimulator();
      const lines = simulator.out().split('\n').filter(Boolean);
      expect(lines).toHaveLength(1);
      const info = JSON.parse(lines[0]!) as Headless;
      expect(info).toMatchObject({ url: `http://127.0.0.1:${simulatorPort}`, apiKey: 'sk_test_local', clock: 'manual' });
      expect(info.endpointId).toMatch(/^we_/);
      expect(info.secret.length).toBeGreaterThan(20);
      expect(info.accounts).toHaveLength(1);
      expect(info.accounts[0]).toMatchObject({ endpointId: info.endpointId, secret: info.secret });

      let serve = await startServe();

      // 1. trigger with an override: the INVOICE_PAID says 777, and so does the simulator's invoice.
      const trigger = await cli(['trigger', 'cash-payment', '--override', 'invoice.amount=777']);
      expect(trigger.stderr).toBe('');
      expect(trigger.code).toBe(0);
      expect(trigger.stdout).toContain('overrides: invoice.amount=777');
      const first = reportedEvents(trigger.stdout);
      expect(first.map((event) => event.eventType)).toEqual([
        'CUSTOMER_CREATED',
        'INVOICE_CREATED',
        'PAYMENT_ATTEMPT_SUCCEEDED',
        'INVOICE_PAID',
        'PAYMENT_COMPLETED',
      ]);
      const paidId = first.find((event) => event.eventType === 'INVOICE_PAID')!.eventId;
      const emitted = (await (await api('/v1/sandbox/events?take=100')).json()) as {
        data: { eventId: string; data: { amount: number; invoiceId: string } }[];
      };
      const paid = emitted.data.find((event) => event.eventId === paidId)!;
      expect(paid.data.amount).toBe(777);
      const invoice = (await (await api(`/v1/invoices/${paid.data.invoiceId}`)).json()) as { amount: number; isPaid: boolean };
      expect(invoice).toMatchObject({ amount: 777, isPaid: true });
      await waitFor(() => handled().length >= 5, 'serve to handle the five events', 60_000);
      expect(handled()).toContain(`${paidId} INVOICE_PAID 777`);

      // 2. send: a file is accepted; the same bytes with one changed, under the file's signature, are refused.
      const customerCreated = emitted.data.find((event) => event.eventId === first[0]!.eventId)!;
      const body = JSON.stringify({ eventId: 'evt_sent_by_file', eventType: 'CUSTOMER_CREATED', data: customerCreated.data });
      const file = join(dir, 'captured.json');
      writeFileSync(file, body);
      const sent = await cli(['send', file, '--to', webhooks]);
      expect(sent.code).toBe(0);
      expect(sent.stdout).toContain('HTTP 200');
      expect(sent.stdout).toContain('{"received":true}');
      const signOnly = await cli(['send', file, '--sign-only']);
      expect(signOnly.code).toBe(0);
      const headers = JSON.parse(signOnly.stdout) as Record<string, string>;
      const tampered = body.replace('evt_sent_by_file', 'evt_sent_by_filf');
      expect(tampered).not.toBe(body);
      const refused = await fetch(webhooks, { method: 'POST', headers, body: tampered });
      expect(refused.status).toBe(401);
      const replayed = await fetch(webhooks, { method: 'POST', headers, body });
      expect(await replayed.json()).toEqual({ received: true, duplicate: true });
      const wrongSecret = await cli(['send', file, '--to', webhooks, '--secret', 'not-the-secret']);
      expect(wrongSecret.code).toBe(1);
      expect(wrongSecret.stdout).toContain('HTTP 401');

      // 3. deliveries resend of a delivery serve stored: a duplicate, and the handler does not run again.
      const listed = await cli(['deliveries', 'list', '--json']);
      expect(listed.code).toBe(0);
      const records = JSON.parse(listed.stdout) as Delivery[];
      expect(records).toHaveLength(5);
      const paidRecord = records.find((record) => record.eventId === paidId)!;
      expect(paidRecord.status).toBe('delivered');
      const handledBefore = handled().length;
      const resend = await cli(['deliveries', 'resend', paidRecord.id]);
      expect(resend.stderr).toBe('');
      expect(resend.code).toBe(0);
      expect(resend.stdout).toContain(`resent ${paidRecord.id}: INVOICE_PAID ${paidId} (the same eventId) → HTTP 200`);
      const afterResend = await inbox();
      expect(afterResend.find((event) => event.eventId === paidId)).toMatchObject({ status: 'done', deliveries: 2 });
      const shown = await cli(['deliveries', 'show', paidRecord.id]);
      expect(shown.stdout.match(/HTTP 200/g)).toHaveLength(2);

      // 4. serve stopped, a flow's deliveries fail; the clock plays the retries at the spec's delays.
      serve.child.kill('SIGTERM');
      expect((await serve.done).code).toBe(0);
      const second = await cli(['trigger', 'mark-paid']);
      expect(second.code).toBe(0);
      const down = reportedEvents(second.stdout);
      expect(down).toHaveLength(4);
      const downIds = new Set(down.map((event) => event.eventId));
      // Read over REST in the loop (a CLI process per step is slow); the last read goes through deliveries list.
      const failing = async () =>
        ((await (await api('/v1/webhook-events?take=100')).json()) as { data: Delivery[] }).data.filter((record) =>
          downIds.has(record.eventId),
        );
      expect((await failing()).map((record) => record.attempts.length)).toEqual([1, 1, 1, 1]);
      // Three steps (a CLI process each; the machine may be busy): 6 h 30 min plays the six retries after 2 s … 5 h,
      // 1 d the one after a day; the attempt times in the log show each delay.
      for (const [step, fired, attempts] of [
        ['6h30m', 24, 7],
        ['1d', 4, 8],
      ] as const) {
        const advanced = await cli(['clock', 'advance', step]);
        expect(advanced.stderr).toBe('');
        expect(advanced.stdout).toContain(`${fired} timers ran`);
        expect((await failing()).map((record) => record.attempts.length)).toEqual([attempts, attempts, attempts, attempts]);
      }
      // 8 attempts made, all refused; serve starts again before the last retry (3 days on).
      serve = await startServe();
      const last = await cli(['clock', 'advance', '3d']);
      expect(last.stdout).toMatch(/4 timers ran/);
      const played = (JSON.parse((await cli(['deliveries', 'list', '--json'])).stdout) as Delivery[]).filter((record) =>
        downIds.has(record.eventId),
      );
      expect(played).toHaveLength(4);
      for (const record of played) {
        expect(record.status).toBe('delivered');
        expect(record.attempts.map((attempt) => attempt.responseStatus)).toEqual([null, null, null, null, null, null, null, null, 200]);
        const times = record.attempts.map((attempt) => Date.parse(attempt.attemptedAt));
        expect(times.slice(1).map((time, i) => time - times[i]!)).toEqual([...RETRY_DELAYS_MS]);
      }
      await waitFor(() => handled().length >= handledBefore + 4, 'serve to handle the four late events', 60_000);
      serve.child.kill('SIGTERM');
      expect((await serve.done).code).toBe(0);

      const events = await inbox();
      const expected = [...first, ...down].map((event) => event.eventId).sort();
      expect(
        events
          .filter((event) => event.eventId !== 'evt_sent_by_file')
          .map((event) => event.eventId)
          .sort(),
      ).toEqual(expected);
      for (const event of events) expect(event.status).toBe('done');
      expect(events.filter((event) => downIds.has(event.eventId)).map((event) => event.deliveries)).toEqual([1, 1, 1, 1]);
      const handledIds = handled().map((line) => line.split(' ')[0]!);
      expect(handledIds.filter((id) => id !== 'evt_sent_by_file').sort()).toEqual(expected);
      expect(new Set(handledIds).size).toBe(handledIds.length);

      // 5. A restart with the same --state keeps the customers and the endpoint (same id, same secret).
      const customersBefore = (await (await api('/v1/customers')).json()) as { total: number; data: { id: string }[] };
      expect(customersBefore.total).toBe(2);
      simulator.child.kill('SIGTERM');
      expect((await simulator.done).code).toBe(0);
      expect(existsSync(stateFile)).toBe(true);
      const restarted = await startSimulator();
      const again = JSON.parse(restarted.out().split('\n')[0]!) as Headless;
      expect(again).toMatchObject({ endpointId: info.endpointId, secret: info.secret });
      const customersAfter = (await (await api('/v1/customers')).json()) as { total: number; data: { id: string }[] };
      expect(customersAfter.data.map((customer) => customer.id)).toEqual(customersBefore.data.map((customer) => customer.id));
      const endpoints = (await (await api('/v1/webhooks')).json()) as { data: { id: string }[] };
      expect(endpoints.data.map((endpoint) => endpoint.id)).toEqual([info.endpointId]);
      restarted.child.kill('SIGTERM');
      expect((await restarted.done).code).toBe(0);
    } finally {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
