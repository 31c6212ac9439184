import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { webhookEventRecordSchema, listPageSchema } from '../../src/events/rest-contract.js';
import { RETRY_DELAYS_MS, startSimulator } from '../../src/simulator/index.js';
import { listen } from '../helpers/servers.js';
import { api, recordingReceiver, registerEndpoint } from './api.js';
import { waitFor } from '../helpers/wait.js';

/** A loopback URL where nothing listens: a port that was free a moment ago. */
async function refusedUrl(): Promise<string> {
  const { url, close } = await listen(createServer());
  await close();
  return `${url}/webhooks`;
}

describe('delivery retries', () => {
  it('a receiver answering 500 three times gets the event on the 4th attempt, at the scaled delays', { timeout: 20_000 }, async () => {
    const receiver = await recordingReceiver(({ count }) => (count <= 3 ? 500 : 200));
    const simulator = await startSimulator({ timeScale: 100 });
    try {
      const endpoint = await registerEndpoint(simulator.url, receiver.url, ['CUSTOMER_CREATED']);
      const event = simulator.emit('CUSTOMER_CREATED');
      await waitFor(() => receiver.received.length >= 4, 'the fourth attempt', 10_000);

      const gaps = receiver.received.slice(1).map((arrival, i) => arrival.at - receiver.received[i]!.at);
      const expected = RETRY_DELAYS_MS.slice(0, 3).map((delay) => delay / 100); // 20 ms, 100 ms, 3 s
      console.log(`retry gaps (ms): measured ${gaps.map((gap) => gap.toFixed(1)).join(', ')}; scheduled ${expected.join(', ')}`);
      gaps.forEach((gap, i) => {
        expect(gap).toBeGreaterThanOrEqual(expected[i]! * 0.9);
        expect(gap).toBeLessThan(expected[i]! + 1000);
      });

      const history = await api(simulator.url).get(`/v1/webhook-events?eventId=${event.eventId}`);
      const page = listPageSchema(webhookEventRecordSchema).parse(history.body);
      expect(page.data).toHaveLength(1);
      const record = page.data[0]!;
      expect(record).toMatchObject({ endpointId: endpoint.id, eventType: 'CUSTOMER_CREATED', status: 'delivered', nextAttemptAt: null });
      expect(record.attempts.map((attempt) => attempt.responseStatus)).toEqual([500, 500, 500, 200]);
      expect(record.attempts.map((attempt) => attempt.attemptNumber)).toEqual([1, 2, 3, 4]);
      expect(record.attempts[0]?.error).toMatch(/HTTP 500/);
      expect(record.attempts[3]?.error).toBeNull();
      // Each attempt is signed afresh: the same body, the same eventId.
      expect(new Set(receiver.received.map((arrival) => arrival.body)).size).toBe(1);
    } finally {
      await simulator.close();
      await receiver.close();
    }
  });

  it('a refused connection is retried: attempts with no status and the error; 9 failed attempts mark the record failed', {
    timeout: 20_000,
  }, async () => {
    // At this scale the whole 4-day schedule takes about 0.4 s.
    const simulator = await startSimulator({ timeScale: 1_000_000 });
    try {
      await registerEndpoint(simulator.url, await refusedUrl(), ['INVOICE_PAID']);
      const event = simulator.emit('INVOICE_PAID');
      await waitFor(() => simulator.webhookEvents({ eventId: event.eventId })[0]?.status === 'failed', 'the record to fail', 10_000);
      const [record] = simulator.webhookEvents({ eventId: event.eventId });
      expect(record?.attempts).toHaveLength(1 + RETRY_DELAYS_MS.length);
      for (const attempt of record!.attempts) {
        expect(attempt.responseStatus).toBeNull();
        expect(attempt.error).toMatch(/ECONNREFUSED/);
      }
      expect(record?.nextAttemptAt).toBeNull();
      expect((await api(simulator.url).get('/v1/webhook-events?status=failed')).body).toMatchObject({ total: 1 });
    } finally {
      await simulator.close();
    }
  });

  it('a receiver that does not answer within the delivery timeout counts as a failed attempt', async () => {
    const hanging = createServer(() => undefined);
    const { url, close } = await listen(hanging);
    const simulator = await startSimulator({ deliveryTimeoutMs: 200 });
    try {
      await registerEndpoint(simulator.url, `${url}/webhooks`, ['INVOICE_PAID']);
      const event = simulator.emit('INVOICE_PAID');
      await waitFor(() => (simulator.webhookEvents({ eventId: event.eventId })[0]?.attempts.length ?? 0) >= 1, 'the first attempt');
      const [record] = simulator.webhookEvents({ eventId: event.eventId });
      expect(record).toMatchObject({ status: 'pending', attempts: [{ responseStatus: null, error: 'no answer within 200 ms' }] });
      expect(Date.parse(record!.nextAttemptAt!)).toBeGreaterThan(Date.now() + 1000);
    } finally {
      await simulator.close();
      await close();
    }
  });

  it('close() stops the retries: nothing is sent afterwards', async () => {
    const simulator = await startSimulator({ timeScale: 100 });
    await registerEndpoint(simulator.url, await refusedUrl(), ['INVOICE_PAID']);
    simulator.emit('INVOICE_PAID');
    await waitFor(() => simulator.deliveryPosts().length >= 1, 'the first attempt');
    await simulator.close();
    const sent = simulator.deliveryPosts().length;
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(simulator.deliveryPosts().length).toBe(sent);
  });

  it('POST /v1/webhook-events/{id}/retry sends once more now and answers the record', async () => {
    const receiver = await recordingReceiver(({ count }) => (count === 1 ? 503 : 200));
    const simulator = await startSimulator();
    try {
      await registerEndpoint(simulator.url, receiver.url, ['INVOICE_PAID']);
      const event = simulator.emit('INVOICE_PAID');
      await waitFor(() => receiver.received.length === 1, 'the first attempt');
      await simulator.idle();
      const [record] = simulator.webhookEvents({ eventId: event.eventId });
      expect(record?.status).toBe('pending');
      const retried = await api(simulator.url).post(`/v1/webhook-events/${record!.id}/retry`);
      expect(retried.status).toBe(200);
      expect(retried.body).toMatchObject({
        status: 'delivered',
        nextAttemptAt: null,
        attempts: [{ responseStatus: 503 }, { responseStatus: 200, attemptNumber: 2 }],
      });
    } finally {
      await simulator.close();
      await receiver.close();
    }
  });
});
