import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/examples.js';
import { ensureHistoryPartitions } from '../../src/store/history-partitions.js';
import { migrateMirror } from '../../src/store/migrate.js';
import { disputeFromEvent } from '../../src/sync/mirror/states.js';
import { writeMirrorState } from '../../src/sync/mirror/write.js';
import { namedByStoredEvents } from '../../src/sync/verify/stored-names.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { backends, dispose } from '../helpers/stores.js';

// namedByStoredEvents reads the events of a type a page (500) at a time, up by seq for a whole pass and down from the
// newest for a sample: more events than two pages, so that a page boundary that skipped or repeated events shows.

const EVENTS = 1_100;

describe.each(backends)('the stored events read a page at a time on $name', (backend) => {
  it.skipIf(!backend.available)(
    'names every record across pages, the newest N for a sample, and skips rows the mirror has',
    {
      timeout: 120_000,
    },
    async () => {
      const store = await backend.open();
      const mirrorSchema = `${store.schema}_mirror`;
      const db = store.db.withoutPlugins();
      try {
        await ensureHistoryPartitions(store);
        await migrateMirror(store, mirrorSchema);
        for (let first = 0; first < EVENTS; first += 250) {
          const rows = Array.from({ length: Math.min(250, EVENTS - first) }, (_, k) => {
            const event = exampleEvent('DISPUTE_CREATED', { eventId: `evt_p${first + k}` });
            event.data.dispute.id = `dsp_${String(first + k).padStart(4, '0')}`;
            return sql`('default', ${event.eventId}, 'DISPUTE_CREATED', ${JSON.stringify(event)}, 'done')`;
          });
          await sql`insert into ${sql.id(store.schema, 'inbox_events')} (account, event_id, event_type, raw_body, status)
          values ${sql.join(rows)}`.execute(db);
        }
        // One record the mirror has: named, but not unmirrored.
        const kept = exampleEvent('DISPUTE_CREATED').data;
        const state = disputeFromEvent(
          { ...kept.dispute, id: 'dsp_0700' },
          kept.response,
          { paymentId: kept.payment.id, customerId: null },
          0,
        );
        await writeMirrorState(db, mirrorSchema, 'default', state, null);

        const all = (await namedByStoredEvents(db, store.schema, mirrorSchema, ['disputes'], { account: 'default', since: null })).get(
          'disputes',
        )!;
        expect(all.events).toBe(EVENTS);
        expect(all.named.size).toBe(EVENTS);
        expect(all.unmirrored.size).toBe(EVENTS - 1);
        expect(all.unmirrored.has('dsp_0700')).toBe(false);
        expect(all.named.get('dsp_1099')?.eventId).toBe('evt_p1099');

        const newest = (
          await namedByStoredEvents(db, store.schema, mirrorSchema, ['disputes'], { account: 'default', since: null, newest: 600 })
        ).get('disputes')!;
        expect(newest.events).toBe(600);
        expect([...newest.named.keys()].sort()).toEqual(
          Array.from({ length: 600 }, (_, k) => `dsp_${String(EVENTS - 600 + k).padStart(4, '0')}`),
        );
      } finally {
        await dropMirrorSchema(store, mirrorSchema);
        await dispose(store);
      }
    },
  );
});
