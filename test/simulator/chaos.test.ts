import { createServer } from 'node:http';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { EVENT_TYPES } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { startSimulator } from '../../src/simulator/index.js';
import { listEvents } from '../../src/store/inbox.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { registerEndpoint } from './api.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
const EVENTS = 1000;
// The real server when there is one (as CI has), else the embedded database.
const backend = backends.find((candidate) => candidate.available)!;

describe(`chaos: duplicates and reordering, inbox on ${backend.name}`, () => {
  it(`${EVENTS} events arrive duplicated and out of order; the receiver stores each exactly once`, { timeout: 90_000 }, async () => {
    const simulator = await startSimulator({ duplicateRate: 0.3, reorder: true, random: 20_261_123, logger: silent });
    const store = await backend.open();
    let hooks: Payhooks | undefined;
    const receiver = await listen(createServer((req, res) => void hooks!.node()(req, res)));
    try {
      const endpoint = await registerEndpoint(simulator.url, `${receiver.url}/webhooks`, EVENT_TYPES);
      hooks = createPayhooks({ secret: endpoint.secret, database: store, logger: silent });

      const started = performance.now();
      const emitted = Array.from({ length: EVENTS }, (_, i) => simulator.emit(EVENT_TYPES[i % EVENT_TYPES.length]!).eventId);
      await waitFor(
        async () => {
          await simulator.idle();
          return simulator.webhookEvents({ status: 'pending' }).length === 0;
        },
        'every record to be delivered',
        60_000,
      );
      const seconds = (performance.now() - started) / 1000;

      const posts = simulator.deliveryPosts();
      const stored = await listEvents(store, { limit: 5 * EVENTS });
      const totalDeliveries = stored.reduce((sum, event) => sum + event.deliveries, 0);
      const arrivalOrder = [...stored].reverse().map((event) => event.eventId); // listEvents is newest first
      const duplicates = posts.filter((post) => post.duplicate).length;
      console.log(
        `chaos: ${EVENTS} events, ${posts.length} POSTs (${duplicates} duplicates), ${stored.length} rows, deliveries summed ${totalDeliveries}, ${seconds.toFixed(1)} s on ${backend.name}`,
      );

      expect(stored).toHaveLength(EVENTS);
      expect(new Set(stored.map((event) => event.eventId))).toEqual(new Set(emitted));
      expect(posts.every((post) => post.responseStatus === 200)).toBe(true);
      expect(posts.length).toBeGreaterThan(EVENTS);
      expect(duplicates).toBeGreaterThan(EVENTS * 0.2);
      expect(duplicates).toBeLessThan(EVENTS * 0.4);
      expect(totalDeliveries).toBe(posts.length);
      expect(stored.some((event) => event.deliveries > 1)).toBe(true);
      expect(arrivalOrder).not.toEqual(emitted);
      expect(simulator.webhookEvents({ status: 'delivered' })).toHaveLength(EVENTS);
    } finally {
      await receiver.close();
      await simulator.close();
      await dispose(store);
    }
  });
});
