import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createDefaultScheme, withSimulatedClock, WebhookVerificationError } from '../../src/signature/index.js';
import { addMonths } from '../../src/simulator/collections.js';
import { createSandboxClient, RETRY_DELAYS_MS, runFlow, startSimulator } from '../../src/simulator/index.js';
import { listen } from '../helpers/servers.js';
import { api, recordingReceiver, registerEndpoint } from './api.js';

// The simulator's manual clock: time stands still until advanced, and what comes due on the way (retries,
// subscription collections) runs in order, each at its own simulated time.

const START = Date.parse('2027-03-01T09:00:00.000Z');

async function refusedUrl(): Promise<string> {
  const { url, close } = await listen(createServer());
  await close();
  return `${url}/webhooks`;
}

describe('the manual clock', () => {
  it('plays the 8 retries of a refused delivery at the spec delays, one per step, then marks it failed', { timeout: 30_000 }, async () => {
    const simulator = await startSimulator({ clock: 'manual', startAt: START });
    try {
      await registerEndpoint(simulator.url, await refusedUrl(), ['CUSTOMER_CREATED']);
      const event = simulator.emit('CUSTOMER_CREATED');
      await simulator.idle();
      const record = () => simulator.webhookEvents({ eventId: event.eventId })[0]!;
      expect(record().attempts).toHaveLength(1);
      expect(record().attempts[0]!.attemptedAt).toBe(new Date(START).toISOString());
      expect(record().nextAttemptAt).toBe(new Date(START + RETRY_DELAYS_MS[0]!).toISOString());
      // A step 1 ms short of a delay plays nothing; the last millisecond plays exactly one retry.
      for (const [i, delay] of RETRY_DELAYS_MS.entries()) {
        expect((await simulator.clock.advance(delay - 1)).fired).toBe(0);
        expect(record().attempts).toHaveLength(i + 1);
        expect((await simulator.clock.advance(1)).fired).toBe(1);
        expect(record().attempts).toHaveLength(i + 2);
      }
      const attempts = record().attempts;
      const gaps = attempts.slice(1).map((attempt, i) => Date.parse(attempt.attemptedAt) - Date.parse(attempts[i]!.attemptedAt));
      expect(gaps).toEqual([...RETRY_DELAYS_MS]);
      expect(record()).toMatchObject({ status: 'failed', nextAttemptAt: null });
      expect(attempts.every((attempt) => attempt.responseStatus === null)).toBe(true);
      expect(simulator.clock.now().toISOString()).toBe(new Date(START + RETRY_DELAYS_MS.reduce((a, b) => a + b, 0)).toISOString());
      expect(simulator.clock.pending()).toEqual([]);
    } finally {
      await simulator.close();
    }
  });

  it('signs each delivery with the simulated time: a plain scheme refuses it, one told the simulated time accepts it', async () => {
    const receiver = await recordingReceiver(() => 500);
    const simulator = await startSimulator({ clock: 'manual', startAt: Date.now() });
    try {
      const { secret } = await registerEndpoint(simulator.url, receiver.url, ['INVOICE_PAID']);
      simulator.emit('INVOICE_PAID');
      await simulator.idle();
      await simulator.clock.advance('3d'); // the retries after 2 s … 1 d run; the 3-day one is still ahead
      const last = receiver.received.at(-1)!;
      expect(receiver.received).toHaveLength(8);
      const timestamp = Number(last.headers['x-webhook-timestamp']);
      expect(timestamp).toBe(Math.floor(Date.parse(simulator.webhookEvents()[0]!.attempts.at(-1)!.attemptedAt) / 1000));
      expect(Math.floor(Number(last.headers['x-payhooks-simulated-time']) / 1000)).toBe(timestamp);
      const delivery = { headers: last.headers as Record<string, string>, rawBody: Buffer.from(last.body) };
      const scheme = createDefaultScheme({ secrets: [secret] });
      expect(() => scheme.verify(delivery)).toThrow(WebhookVerificationError);
      expect(() => scheme.verify(delivery)).toThrow(/in the future/);
      expect(withSimulatedClock(scheme).verify(delivery).timestamp).toBe(timestamp);
      // Told the simulator's time now (about 1.7 days after that attempt), it is a replay.
      expect(() => withSimulatedClock(scheme, () => simulator.clock.now()).verify(delivery)).toThrow(/old, over the tolerance/);
      // The signature is still checked: one byte changed fails whatever the clock.
      const forged = { ...delivery, rawBody: Buffer.from(last.body.replace('"', "'")) };
      expect(() => withSimulatedClock(scheme).verify(forged)).toThrow(/None of the/);
    } finally {
      await simulator.close();
      await receiver.close();
    }
  });

  it('collects a subscription once a month: created on day 0, advanced 3 months, 3 cycles', { timeout: 20_000 }, async () => {
    const simulator = await startSimulator({ clock: 'manual', startAt: START });
    try {
      const sandbox = createSandboxClient({ baseUrl: simulator.url, apiKey: 'sk_test_clock' });
      const customer = await api(simulator.url).post('/v1/customers', { username: 'monthly' });
      const customerId = (customer.body as { id: string }).id;
      const first = addMonths(new Date(START).toISOString(), 1);
      const subscription = await sandbox.createSubscription({
        customerId,
        firstCollectionDate: first,
        items: [{ quantity: 1, concept: { displayName: 'Plan', amount: 9900, currency: 'MXN' } }],
      });
      const before = simulator.events().length;
      const advanced = await simulator.clock.advanceTo(addMonths(new Date(START).toISOString(), 3));
      expect(advanced.fired).toBe(3);
      const events = simulator.events().slice(before);
      expect(events.map((event) => event.eventType)).toEqual([
        'INVOICE_CREATED',
        'SUBSCRIPTION_UPDATED',
        'INVOICE_CREATED',
        'SUBSCRIPTION_UPDATED',
        'INVOICE_CREATED',
        'SUBSCRIPTION_UPDATED',
      ]);
      const invoices = simulator.records().invoices.filter((invoice) => invoice.customerId === customerId);
      expect(invoices.map((invoice) => invoice.dueDate)).toEqual([1, 2, 3].map((n) => addMonths(new Date(START).toISOString(), n)));
      expect(invoices.map((invoice) => invoice.createdAt)).toEqual(invoices.map((invoice) => invoice.dueDate));
      const stored = simulator.records().subscriptions.find((s) => s.id === subscription.id)!;
      expect(stored.nextCollectionDate).toBe(addMonths(first, 3));
    } finally {
      await simulator.close();
    }
  });

  it('dates what flows create from the simulated time: the invoice is due a week after the manual clock', async () => {
    const simulator = await startSimulator({ clock: 'manual', startAt: START });
    try {
      const result = await runFlow('mark-paid', { baseUrl: simulator.url });
      const invoice = simulator.records().invoices.find((i) => i.id === result.resources.invoice![0])!;
      expect(invoice.createdAt).toBe(new Date(START).toISOString());
      expect(invoice.dueDate).toBe(new Date(START + 7 * 86_400_000).toISOString());
      expect(invoice.paidAt).toBe(new Date(START).toISOString());
    } finally {
      await simulator.close();
    }
  });

  it("runs a rotation's grace period on the simulated time: both secrets sign until a day has been advanced", async () => {
    const receiver = await recordingReceiver();
    const simulator = await startSimulator({ clock: 'manual', startAt: START, timeScale: 1000 });
    try {
      const { id } = await registerEndpoint(simulator.url, receiver.url, ['CUSTOMER_CREATED']);
      const rotated = await api(simulator.url).post(`/v1/webhooks/${id}/secret/rotate`);
      expect((rotated.body as { previousSecretExpiresAt: string }).previousSecretExpiresAt).toBe(
        new Date(START + 86_400_000).toISOString(),
      );
      const signatures = () => String(receiver.received.at(-1)!.headers['x-webhook-signature']).split(' ').length;
      simulator.emit('CUSTOMER_CREATED');
      await simulator.idle();
      expect(signatures()).toBe(2);
      await simulator.clock.advance('23h');
      simulator.emit('CUSTOMER_CREATED');
      await simulator.idle();
      expect(signatures()).toBe(2);
      await simulator.clock.advance('1h');
      simulator.emit('CUSTOMER_CREATED');
      await simulator.idle();
      expect(signatures()).toBe(1);
    } finally {
      await simulator.close();
      await receiver.close();
    }
  });

  it('refuses to advance the real clock or to go back', async () => {
    const real = await startSimulator();
    const manual = await startSimulator({ clock: 'manual', startAt: START });
    try {
      await expect(real.clock.advance('1d')).rejects.toThrow(/real clock/);
      const refused = await api(real.url).post('/v1/sandbox/clock/advance', { by: '1d' });
      expect(refused.status).toBe(409);
      await expect(manual.clock.advanceTo(START - 1)).rejects.toThrow(/forward only/);
      const bad = await api(manual.url).post('/v1/sandbox/clock/advance', { by: 'a day' });
      expect(bad.status).toBe(400);
      const moved = await api(manual.url).post('/v1/sandbox/clock/advance', { by: '1d' });
      expect(moved.body).toEqual({ from: new Date(START).toISOString(), to: new Date(START + 86_400_000).toISOString(), fired: 0 });
      const clock = await api(manual.url).get('/v1/sandbox/clock');
      expect(clock.body).toEqual({ mode: 'manual', now: new Date(START + 86_400_000).toISOString(), pending: [] });
    } finally {
      await real.close();
      await manual.close();
    }
  });
});

describe('flow overrides', () => {
  it('cash-payment with invoice.amount=777: INVOICE_PAID says 777 and so does the invoice record', async () => {
    const simulator = await startSimulator();
    try {
      const result = await runFlow('cash-payment', {
        baseUrl: simulator.url,
        overrides: {
          set: { 'invoice.amount': '777', 'customer.email': 'grace@example.com' },
          add: { 'invoice.metadata.plan': 'gold' },
          remove: ['customer.metadata.source'],
        },
      });
      const paid = result.events.find((event) => event.eventType === 'INVOICE_PAID')!.data as {
        amount: number;
        invoice: { amount: number };
        metadata: { key: string; value: string }[];
      };
      expect(paid.amount).toBe(777);
      expect(paid.invoice.amount).toBe(777);
      expect(paid.metadata).toEqual([
        { key: 'flow', value: 'cash-payment' },
        { key: 'plan', value: 'gold' },
      ]);
      const invoice = simulator.records().invoices.find((i) => i.id === result.resources.invoice![0])!;
      expect(invoice.amount).toBe(777);
      const customer = simulator.records().customers.find((c) => c.id === result.resources.customer![0])!;
      expect(customer.email).toBe('grace@example.com');
      expect(customer.metadata).toEqual([]);
    } finally {
      await simulator.close();
    }
  });

  it('a path the flow does not create is refused before any call, listing the paths it does', async () => {
    const simulator = await startSimulator();
    try {
      const refused = runFlow('cash-payment', { baseUrl: simulator.url, overrides: { set: { 'subscription.amount': '5' } } });
      await expect(refused).rejects.toThrow(
        /subscription\.amount is not a path the flow cash-payment creates\. Its paths: customer\.name, .*invoice\.amount/,
      );
      await expect(runFlow('cash-payment', { baseUrl: simulator.url, overrides: { set: { 'invoice.amount': 'lots' } } })).rejects.toThrow(
        /invoice\.amount takes a whole number/,
      );
      expect(simulator.events()).toHaveLength(0);
      const subscription = await runFlow('subscription-cycle', {
        baseUrl: simulator.url,
        overrides: { set: { 'subscription.amount': '1234' } },
      });
      const created = subscription.events.find((event) => event.eventType === 'INVOICE_CREATED')!.data as { amount: number };
      expect(created.amount).toBe(1234);
    } finally {
      await simulator.close();
    }
  });
});

describe('snapshot and restore', () => {
  it('a simulator started from a snapshot has the customers, endpoints (with their secrets) and the manual time', async () => {
    const first = await startSimulator({ clock: 'manual', startAt: START });
    const endpoint = await registerEndpoint(first.url, 'http://127.0.0.1:9/webhooks', ['CUSTOMER_CREATED']);
    await runFlow('mark-paid', { baseUrl: first.url });
    await first.clock.advance('2h');
    const snapshot = JSON.parse(JSON.stringify(first.snapshot()));
    await first.close();
    const second = await startSimulator({ clock: 'manual', restore: snapshot });
    try {
      expect(second.records()).toEqual(first.records());
      expect(second.records().customers).toHaveLength(1);
      expect(second.clock.now().toISOString()).toBe(new Date(START + 2 * 3_600_000).toISOString());
      const secret = await api(second.url).get(`/v1/webhooks/${endpoint.id}/secret`);
      expect(secret.body).toEqual({ secret: endpoint.secret });
      expect(second.events().map((event) => event.eventType)).toEqual(first.events().map((event) => event.eventType));
    } finally {
      await second.close();
    }
  });
});
