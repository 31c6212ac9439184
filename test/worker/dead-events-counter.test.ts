// Issue 46, finding 8: `payhooks_events_dead_total` counts events the worker recorded dead and only grows, where the
// gauge `payhooks_events{status="dead"}` falls when an operator replays them (which increase() read as a counter
// reset, so the dead-events rule fired right after the fix it asked for). A real worker on an in-memory PGlite; the
// series as a scrape reads them.
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooksMetrics } from '../../src/metrics/payhooks-metrics.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { getEvent } from '../../src/store/inbox.js';
import { replayEvents } from '../../src/store/maintenance.js';
import { signedRequest } from '../../src/testing/index.js';
import { DeadLetterError } from '../../src/worker/handler-errors.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'whsec_dead_counter';

/** One series' value in a scrape, undefined when the scrape does not have it. */
function sampleOf(scrape: string, series: string): number | undefined {
  const line = scrape.split('\n').find((text) => text.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('payhooks_events_dead_total', () => {
  it('is 0 from the first scrape, counts each event that ends dead, and a replay takes nothing back', { timeout: 90_000 }, async () => {
    const registry = new Registry();
    let hooks: Payhooks | undefined;
    const metrics = createPayhooksMetrics(registry, { store: () => hooks!.ready() });
    hooks = createPayhooks({
      secret: SECRET,
      database: { dataDir: 'memory://' },
      logger: pino({ level: 'silent' }),
      observe: metrics.observe,
      worker: { pollIntervalMs: 50, maxAttempts: 2, backoff: { baseMs: 10, maxMs: 20 } },
    });
    let fixed = false;
    hooks.on(
      'INVOICE_PAID',
      () => {
        if (!fixed) throw new DeadLetterError('ledger answered 422: account 4410 is closed');
      },
      { name: 'ledger' },
    );
    // Fails on every attempt: dead once the last of its two attempts fails.
    hooks.on(
      'CUSTOMER_CREATED',
      () => {
        if (!fixed) throw new Error('crm unavailable');
      },
      { name: 'crm' },
    );
    const store = await hooks.ready();
    const scrape = async () => {
      const text = await registry.metrics();
      return { counter: sampleOf(text, 'payhooks_events_dead_total'), gauge: sampleOf(text, 'payhooks_events{status="dead"}') };
    };
    const deliver = async (event: object) => expect((await hooks!.receive(signedRequest(event, { secret: SECRET }))).status).toBe(200);
    const isDead = async (eventId: string) => (await getEvent(store, eventId))?.status === 'dead';
    try {
      expect(await scrape()).toEqual({ counter: 0, gauge: 0 });
      await hooks.start();

      await deliver(exampleEvent('INVOICE_PAID', { eventId: 'evt_dead_counter_gave_up' }));
      await deliver(exampleEvent('CUSTOMER_CREATED', { eventId: 'evt_dead_counter_attempts' }));
      await waitFor(
        async () => (await isDead('evt_dead_counter_gave_up')) && (await isDead('evt_dead_counter_attempts')),
        'both events dead',
      );
      // The counter moves once the worker has recorded the outcome; the callback follows the write.
      await waitFor(async () => (await scrape()).counter === 2, 'the counter at 2');
      expect(await scrape()).toEqual({ counter: 2, gauge: 2 });

      // The operator fixes the handlers and replays: the gauge falls to 0, the counter stays.
      fixed = true;
      expect((await replayEvents(store, { status: 'dead' })).sort()).toEqual(['evt_dead_counter_attempts', 'evt_dead_counter_gave_up']);
      await waitFor(async () => (await getEvent(store, 'evt_dead_counter_gave_up'))?.status === 'done', 'the replayed event done');
      await waitFor(async () => (await getEvent(store, 'evt_dead_counter_attempts'))?.status === 'done', 'the other one done');
      expect(await scrape()).toEqual({ counter: 2, gauge: 0 });

      // One more ends dead: counted on top.
      fixed = false;
      await deliver(exampleEvent('INVOICE_PAID', { eventId: 'evt_dead_counter_again' }));
      await waitFor(async () => (await scrape()).counter === 3, 'the counter at 3');
      expect(await scrape()).toEqual({ counter: 3, gauge: 1 });
    } finally {
      await hooks.stop();
    }
  });
});
