import { describe, expect, it } from 'vitest';
import { createDefaultScheme } from '../../src/signature/index.js';
import { startSimulator } from '../../src/simulator/index.js';
import { api, recordingReceiver, registerEndpoint } from './api.js';
import { waitFor } from '../helpers/wait.js';

function verifiesWith(secret: string, delivery: { body: string; headers: Record<string, string | string[] | undefined> }): boolean {
  try {
    createDefaultScheme({ secrets: [secret] }).verify({ headers: delivery.headers, rawBody: Buffer.from(delivery.body) });
    return true;
  } catch {
    return false;
  }
}

describe('secret rotation', () => {
  it('during the grace period deliveries carry both signatures; receivers with either secret verify; afterwards only the new one', async () => {
    const receiver = await recordingReceiver();
    // A 24 h grace period at time scale 86 400 lasts one second.
    const simulator = await startSimulator({ timeScale: 86_400 });
    try {
      const endpoint = await registerEndpoint(simulator.url, receiver.url, ['PAYMENT_COMPLETED']);
      const oldSecret = endpoint.secret;
      expect(oldSecret.length).toBeGreaterThanOrEqual(43);

      simulator.emit('PAYMENT_COMPLETED');
      await waitFor(() => receiver.received.length === 1, 'the delivery before rotation');
      const before = receiver.received[0]!;
      expect(before.headers['x-webhook-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
      expect(before.headers['content-type']).toBe('application/json');
      expect(before.headers['x-webhook-timestamp']).toMatch(/^\d{10}$/);

      const rotated = await api(simulator.url).post(`/v1/webhooks/${endpoint.id}/secret/rotate`);
      const { secret: newSecret, previousSecretExpiresAt } = rotated.body as { secret: string; previousSecretExpiresAt: string };
      expect(newSecret).not.toBe(oldSecret);
      expect(Date.parse(previousSecretExpiresAt) - Date.now()).toBeGreaterThan(500);
      expect(Date.parse(previousSecretExpiresAt) - Date.now()).toBeLessThanOrEqual(1000);
      expect((await api(simulator.url).get(`/v1/webhooks/${endpoint.id}/secret`)).body).toEqual({ secret: newSecret });

      simulator.emit('PAYMENT_COMPLETED');
      await waitFor(() => receiver.received.length === 2, 'the delivery during the grace period');
      const during = receiver.received[1]!;
      expect(during.headers['x-webhook-signature']).toMatch(/^v1=[0-9a-f]{64} v1=[0-9a-f]{64}$/);
      expect(verifiesWith(oldSecret, during)).toBe(true);
      expect(verifiesWith(newSecret, during)).toBe(true);
      expect(verifiesWith('some-other-secret', during)).toBe(false);

      await new Promise((resolve) => setTimeout(resolve, Date.parse(previousSecretExpiresAt) - Date.now() + 50));
      simulator.emit('PAYMENT_COMPLETED');
      await waitFor(() => receiver.received.length === 3, 'the delivery after the grace period');
      const after = receiver.received[2]!;
      expect(after.headers['x-webhook-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
      expect(verifiesWith(newSecret, after)).toBe(true);
      expect(verifiesWith(oldSecret, after)).toBe(false);
    } finally {
      await simulator.close();
      await receiver.close();
    }
  });
});
