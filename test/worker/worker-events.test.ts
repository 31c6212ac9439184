// The worker tells what happens through a typed event map (hooks.events / worker.events): a subscriber sees one
// event's story in order, and a listener that throws changes nothing the worker does.
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { getEvent } from '../../src/store/inbox.js';
import type { WorkerEventMap, WorkerEventName } from '../../src/worker/worker-events.js';
import { WorkerEvents } from '../../src/worker/worker-events.js';
import { putEvent } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const NAMES: WorkerEventName[] = [
  'events:claimed',
  'run:started',
  'run:ended',
  'event:retry-scheduled',
  'event:parked',
  'event:needs-review',
  'event:dead',
  'event:finished',
  'lease:lost',
  'outcomes:written',
  'queue:vacuumed',
  'worker:stopping',
  'worker:stopped',
];

/** Subscribes to every worker event, keeping a line for each (the ones about an event carry its id's tail). */
function record(hooks: Payhooks, throwing = false): string[] {
  const lines: string[] = [];
  for (const name of NAMES) {
    hooks.events.on(name, (payload: WorkerEventMap[typeof name]) => {
      const p = payload as Partial<WorkerEventMap['run:ended'] & WorkerEventMap['event:finished']>;
      if (name === 'outcomes:written' || name === 'queue:vacuumed') lines.push(name);
      else if (name === 'run:ended') lines.push(`${name} ${p.handler} attempt ${p.attempt} ${p.failed ? 'failed' : 'ok'}`);
      else if (name === 'event:finished') lines.push(`${name} ${p.status}`);
      else lines.push(p.attempt !== undefined ? `${name} attempt ${p.attempt}` : name);
      if (throwing) throw new Error(`a listener of ${name} that throws`);
    });
  }
  return lines;
}

/** The story without the writes of outcome batches, whose number depends on how the batches fell. */
const story = (lines: string[]) => lines.filter((line) => line !== 'outcomes:written');

describe.each(backends)('worker events on $name', (backend) => {
  const stores: Awaited<ReturnType<Backend['open']>>[] = [];
  afterAll(async () => {
    for (const store of stores) await dispose(store);
  });
  type Backend = (typeof backends)[number];

  async function oneEventThatFailsOnce(
    throwing: boolean,
  ): Promise<{ lines: string[]; status: string | undefined; attempts: number | undefined }> {
    const store = await backend.open();
    stores.push(store);
    const hooks = createPayhooks({
      database: store,
      logger: pino({ level: 'silent' }),
      worker: { pollIntervalMs: 50, backoff: { baseMs: 10, maxMs: 20 } },
    });
    let runs = 0;
    hooks.on(
      'INVOICE_PAID',
      async () => {
        runs++;
        if (runs === 1) throw new Error('the ERP answered 503');
      },
      { name: 'erp' },
    );
    const lines = record(hooks, throwing);
    await putEvent(store, exampleEvent('INVOICE_PAID', { eventId: 'evt_once' }));
    await hooks.start();
    await waitFor(async () => (await getEvent(store, 'evt_once'))?.status === 'done', 'evt_once done');
    const stored = await getEvent(store, 'evt_once');
    await hooks.stop(2000);
    return { lines, status: stored?.status, attempts: stored?.attempts };
  }

  it.skipIf(!backend.available)('an event that fails once then succeeds tells its story in order', async () => {
    const { lines } = await oneEventThatFailsOnce(false);
    expect(story(lines)).toEqual([
      'events:claimed',
      'run:started attempt 1',
      'run:ended erp attempt 1 failed',
      'event:retry-scheduled attempt 1',
      'events:claimed',
      'run:started attempt 2',
      'run:ended erp attempt 2 ok',
      'event:finished done',
      'worker:stopping',
      'worker:stopped',
    ]);
    // Each attempt's outcome was written before the next claim could take the event again.
    expect(lines.indexOf('outcomes:written')).toBeGreaterThan(lines.indexOf('event:retry-scheduled attempt 1'));
    expect(lines.indexOf('outcomes:written')).toBeLessThan(lines.lastIndexOf('events:claimed'));
  });

  it.skipIf(!backend.available)('a listener that throws at every event changes nothing: the same story, the event done', async () => {
    const quiet = await oneEventThatFailsOnce(false);
    const loud = await oneEventThatFailsOnce(true);
    expect(story(loud.lines)).toEqual(story(quiet.lines));
    expect(loud).toMatchObject({ status: 'done', attempts: 2 });
  });
});

describe('WorkerEvents', () => {
  it('runs every listener of an event, in the order subscribed, even after one throws; an unsubscribed one no more', () => {
    const errors: unknown[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void errors.push(JSON.parse(line)) });
    const events = new WorkerEvents(logger);
    const heard: string[] = [];
    events.on('lease:lost', ({ eventId }) => heard.push(`first ${eventId}`));
    events.on('lease:lost', () => {
      throw new Error('listener bug');
    });
    const off = events.on('lease:lost', ({ eventId }) => heard.push(`third ${eventId}`));
    expect(events.has('lease:lost')).toBe(true);
    expect(events.has('event:dead')).toBe(false);
    events.emit('lease:lost', { eventId: 'evt_1' });
    off();
    events.emit('lease:lost', { eventId: 'evt_2' });
    expect(heard).toEqual(['first evt_1', 'third evt_1', 'first evt_2']);
    expect(errors).toHaveLength(2);
    expect(errors[0]).toMatchObject({ workerEvent: 'lease:lost', err: { message: 'listener bug' } });
  });
});
