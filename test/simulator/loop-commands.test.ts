import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runSend } from '../../src/cli/send-command.js';
import { createDefaultScheme, createStandardWebhooksScheme } from '../../src/signature/index.js';
import { startSimulator } from '../../src/simulator/index.js';
import { runInProcess } from '../helpers/cli.js';
import { recordingReceiver, registerEndpoint } from './api.js';

// The commands of the developer's loop run in this process (arguments, messages, both schemes, the service branch
// of deliveries); test/simulator/developer-loop.test.ts runs them as real processes.

const NO_ENV = { PAYHOOKS_API_KEY: undefined, PAYHOOKS_API_URL: undefined, PAYHOOKS_WEBHOOK_SECRET: undefined };
const empty = mkdtempSync(join(tmpdir(), 'payhooks-loop-commands-'));

describe('payhooks send', () => {
  it('wraps stdin as the data of a new event with --type, signs it with either scheme, and sends it byte for byte', async () => {
    const receiver = await recordingReceiver();
    try {
      const data = { customerId: 'cus_1', name: 'Ada' };
      const result = await runSend(
        '-',
        { to: receiver.url, type: 'CUSTOMER_UPDATED', secret: 'local-secret' },
        async () => Buffer.from(JSON.stringify(data)),
        { PAYHOOKS_WEBHOOK_SECRET: undefined },
        empty,
      );
      expect(result.ok).toBe(true);
      expect(result.lines[1]).toBe('HTTP 200');
      const [first] = receiver.received;
      const sent = JSON.parse(first!.body) as { eventId: string; eventType: string; data: unknown };
      expect(sent).toEqual({ eventId: expect.stringMatching(/^evt_/), eventType: 'CUSTOMER_UPDATED', data });
      const headers = first!.headers as Record<string, string>;
      expect(
        createDefaultScheme({ secrets: ['local-secret'] }).verify({ headers, rawBody: Buffer.from(first!.body) }).timestamp,
      ).toBeGreaterThan(0);

      const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
      const raw = '{"eventId":"evt_raw","eventType":"INVOICE_PAID","data":{"x":"é"}}';
      const file = join(empty, 'raw.json');
      writeFileSync(file, raw);
      const standard = await runSend(
        file,
        { to: receiver.url, secret, scheme: 'standard-webhooks' },
        undefined,
        { PAYHOOKS_WEBHOOK_SECRET: undefined },
        empty,
      );
      expect(standard.ok).toBe(true);
      const second = receiver.received[1]!;
      expect(second.body).toBe(raw);
      const verified = createStandardWebhooksScheme({ secrets: secret }).verify({
        headers: second.headers as Record<string, string>,
        rawBody: Buffer.from(second.body),
      });
      expect(verified.webhookId).toMatch(/^msg_/);
    } finally {
      await receiver.close();
    }
  });

  it('refuses what it cannot do, with the fix in the message', async () => {
    const env = { PAYHOOKS_WEBHOOK_SECRET: undefined };
    const send = (file: string, options: Parameters<typeof runSend>[1]) => runSend(file, options, undefined, env, empty);
    await expect(send('x.json', { secret: 's' })).rejects.toThrow(/Give the receiver with --to URL/);
    await expect(send('x.json', { to: 'http://127.0.0.1:1/webhooks' })).rejects.toThrow(/No signing secret: pass --secret S/);
    await expect(send(join(empty, 'missing.json'), { to: 'http://127.0.0.1:1/webhooks', secret: 's' })).rejects.toThrow(/no such file/);
    await expect(send('x.json', { to: 'ftp://x', secret: 's' })).rejects.toThrow(/--to must be an http or https URL/);
    await expect(send('x.json', { to: 'http://127.0.0.1:1/w', secret: 's', scheme: 'hmac' as never })).rejects.toThrow(
      /--scheme takes default or standard-webhooks/,
    );
    const file = join(empty, 'not-json.txt');
    writeFileSync(file, 'not json');
    await expect(send(file, { to: 'http://127.0.0.1:1/w', secret: 's', type: 'INVOICE_PAID' })).rejects.toThrow(
      /must hold the event's data as JSON/,
    );
    await expect(send(file, { to: 'http://127.0.0.1:1/w', secret: 's', type: 'INVOICE_PAYED' })).rejects.toThrow(
      /--type takes one of the event types/,
    );
    const printed = await send(file, { secret: 's', signOnly: true });
    expect(Object.keys(JSON.parse(printed.lines[0]!) as object).sort()).toEqual([
      'content-type',
      'x-webhook-signature',
      'x-webhook-timestamp',
    ]);
  });
});

describe('payhooks deliveries and clock', () => {
  it('reads the service when PAYHOOKS_API_KEY and PAYHOOKS_API_URL are set, and resends by eventId', async () => {
    const receiver = await recordingReceiver();
    const simulator = await startSimulator();
    try {
      await registerEndpoint(simulator.url, receiver.url, ['INVOICE_PAID']);
      const event = simulator.emit('INVOICE_PAID');
      await simulator.idle();
      const env = { PAYHOOKS_API_KEY: 'sk_test_service', PAYHOOKS_API_URL: simulator.url };
      const listed = await runInProcess(['deliveries', 'list'], env, empty);
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain(`1 delivery in the service at ${simulator.url}`);
      expect(listed.stdout).toMatch(new RegExp(`whevt_\\S+ +INVOICE_PAID +${event.eventId} +delivered +1 +HTTP 200`));
      const resent = await runInProcess(['deliveries', 'resend', event.eventId], env, empty);
      expect(resent.code).toBe(0);
      expect(resent.stdout).toContain(`INVOICE_PAID ${event.eventId} (the same eventId) → HTTP 200; status delivered, 2 attempts`);
      expect(receiver.received.map((arrival) => (JSON.parse(arrival.body) as { eventId: string }).eventId)).toEqual([
        event.eventId,
        event.eventId,
      ]);
      expect(receiver.received[1]!.body).toBe(receiver.received[0]!.body);
      const unknown = await runInProcess(['deliveries', 'show', 'whevt_nothing'], env, empty);
      expect(unknown.code).toBe(1);
      expect(unknown.stderr).toContain('No delivery "whevt_nothing" in the service at');
    } finally {
      await simulator.close();
      await receiver.close();
    }
  });

  it('clock advance on a real clock, without a simulator, or without a duration is refused clearly', async () => {
    const simulator = await startSimulator();
    try {
      const real = await runInProcess(['clock', 'advance', '1d', '--simulator', simulator.url], NO_ENV, empty);
      expect(real.code).toBe(1);
      expect(real.stderr).toContain('The simulator runs on the real clock; start it with payhooks simulate --clock manual');
      const none = await runInProcess(['clock', 'advance', '1d'], NO_ENV, empty);
      expect(none.code).toBe(1);
      expect(none.stderr).toContain('No simulator to move the clock of');
      const both = await runInProcess(['clock', 'advance', '--simulator', simulator.url], NO_ENV, empty);
      expect(both.stderr).toContain('Give a duration (payhooks clock advance 1d) or --to TIMESTAMP');
      const shown = await runInProcess(['clock', '--simulator', simulator.url], NO_ENV, empty);
      expect(shown.code).toBe(0);
      expect(shown.stdout).toMatch(/\(real clock, simulator http:\/\/127\.0\.0\.1:\d+\)\n0 timers pending/);
      const path = await runInProcess(
        ['trigger', 'cash-payment', '--simulator', simulator.url, '--override', 'invoice.colour=red'],
        NO_ENV,
        empty,
      );
      expect(path.code).toBe(1);
      expect(path.stderr).toContain('invoice.colour is not a path the flow cash-payment creates. Its paths: customer.name,');
      expect(simulator.events()).toHaveLength(0);
    } finally {
      await simulator.close();
    }
  });
});
