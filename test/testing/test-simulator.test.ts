import { createServer } from 'node:http';
import { describe, expect, it } from 'vitest';
import { WebhookVerificationError } from '../../src/signature/index.js';
import { startTestSimulator } from '../../src/testing/index.js';
import { listen } from '../helpers/servers.js';

// payhooks/testing's simulator helpers, as an app's vitest test would use them: a receiver under test that
// verifies with sim.scheme(), a flow with overrides, and the manual clock moved past the retries it needs.

describe('startTestSimulator', () => {
  it('triggers with overrides, plays retries on the manual clock, and its scheme verifies deliveries signed days ahead', async () => {
    let up = false;
    const accepted: { eventType: string; amount: unknown; timestamp: number }[] = [];
    const refusals: string[] = [];
    let verify: ((headers: Record<string, string>, body: Buffer) => number) | undefined;
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks);
        if (!up) return void res.writeHead(503).end();
        try {
          const timestamp = verify!(req.headers as Record<string, string>, body);
          const event = JSON.parse(body.toString()) as { eventType: string; data: { amount?: unknown } };
          accepted.push({ eventType: event.eventType, amount: event.data.amount, timestamp });
          res.writeHead(200).end('{"received":true}');
        } catch (err) {
          refusals.push(err instanceof WebhookVerificationError ? err.reason : String(err));
          res.writeHead(401).end();
        }
      });
    });
    const receiver = await listen(server);
    const sim = await startTestSimulator({
      clock: 'manual',
      startAt: '2027-01-01T00:00:00Z',
      forwardTo: `${receiver.url}/webhooks`,
      events: ['INVOICE_PAID'],
    });
    try {
      const scheme = sim.scheme();
      verify = (headers, rawBody) => scheme.verify({ headers, rawBody }).timestamp;
      const result = await sim.trigger('cash-payment', { 'invoice.amount': '777' });
      expect(result.events.map((event) => event.eventType)).toContain('INVOICE_PAID');
      expect(accepted).toEqual([]);
      expect((await sim.advance('1d')).fired).toBe(6); // after 2 s, 10 s, 5 min, 20 min, 1 h, 5 h: refused (503)
      expect((await sim.advance('7h')).fired).toBe(1); // the 1-day retry, at 1 d 6 h 25 min 12 s: refused
      up = true;
      expect((await sim.advance('3d')).fired).toBe(1);
      expect(accepted).toEqual([{ eventType: 'INVOICE_PAID', amount: 777, timestamp: Date.parse('2027-01-05T06:25:12Z') / 1000 }]);
      expect(refusals).toEqual([]);
      expect(sim.simulator.webhookEvents()[0]).toMatchObject({ status: 'delivered' });
      expect(sim.simulator.webhookEvents()[0]!.attempts).toHaveLength(9);
    } finally {
      await sim.close();
      await receiver.close();
    }
  });

  it('refuses a forwardTo the service would refuse, and stops the simulator it started', async () => {
    await expect(startTestSimulator({ forwardTo: 'http://example.com/webhooks' })).rejects.toThrow(/forwardTo was refused/);
  });
});
