// The console API's story, find and replay-by-window routes (issue 50), and the command line's client of them: what
// `events history` and `events show` print beside a running serve is what the store answers itself.
import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeAdapter } from '../../src/adapters/node-http.js';
import { createAdminApi } from '../../src/console/admin-api.js';
import { createAdminClient } from '../../src/console/admin-client.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { findById } from '../../src/store/find-by-id.js';
import { storeEvent } from '../../src/store/inbox.js';
import { resourceStory } from '../../src/store/resource-story.js';
import { backdate, setState } from '../helpers/inbox.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';

const TOKEN = 'Kc5Khp-5T-08sa41x3vuO2dG9liU0Spms9DJtMqv';
const auth = { authorization: `Bearer ${TOKEN}` };
const T0 = new Date('2026-11-29T02:00:00.000Z');

describe.each(backends)('the story, find and replay-by-window routes on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  async function put(eventId: string, minutes: number, status: 'done' | 'dead', resourceKey: string | null, headers = {}) {
    await storeEvent(store!, {
      eventId,
      eventType: 'CUSTOMER_UPDATED',
      resourceKey,
      rawBody: JSON.stringify({ eventId, data: { email: 'ada@example.com' } }),
      headers,
    });
    await backdate(store!, [eventId], new Date(T0.getTime() + minutes * 60_000));
    await setState(store!, eventId, status, { attempts: 1, last_error: status === 'dead' ? 'crm refused ada@example.com' : undefined });
  }

  it.skipIf(!backend.available)(
    'answers what the store answers, masked unless revealed, and the client reads it back the same',
    async () => {
      store = await backend.open();
      await put('evt_1', 1, 'done', 'customer:cus_1', { 'x-webhook-event-id': 'whevt_1' });
      await put('evt_2', 2, 'dead', 'customer:cus_1');
      await put('evt_3', 50, 'dead', null);
      const api = createAdminApi({ store, token: TOKEN });
      const get = async (url: string) => {
        const answer = await api.handle({ method: 'GET', url, headers: auth });
        return { status: answer.status, body: JSON.parse(answer.body) };
      };

      const masked = await get('/admin/api/story?resource=customer%3Acus_1');
      expect(masked.status).toBe(200);
      expect(masked.body.masked).toBe(true);
      expect(masked.body.mirror).toBeNull();
      expect(masked.body.events.map((e: { eventId: string }) => e.eventId)).toEqual(['evt_1', 'evt_2']);
      expect(masked.body.events[1].lastError).toBe('crm refused a***@***.com');
      expect((await get('/admin/api/story?resource=refund%3Are_1')).body.error.message).toMatch(/Unknown kind of resource "refund"/);
      expect((await get('/admin/api/story')).status).toBe(400);

      expect((await get('/admin/api/find?id=whevt_1')).body).toEqual({
        kind: 'sender-id',
        account: 'default',
        eventId: 'evt_1',
        header: 'x-webhook-event-id',
        accounts: ['default'],
      });
      expect((await get('/admin/api/find?id=nothing')).status).toBe(404);

      // The client beside serve: the same objects as the store's own functions, dates and all.
      const server = await listen(createServer(nodeAdapter(api)));
      try {
        const client = createAdminClient({ url: server.url, token: TOKEN });
        expect(await client.story('cus_1', { limit: undefined })).toEqual(await resourceStory(store, 'cus_1'));
        expect(await client.find('whevt_1')).toEqual(await findById(store, 'whevt_1'));
        expect(await client.find('nothing')).toBeUndefined();
        const window = { since: new Date(T0.getTime()), until: new Date(T0.getTime() + 30 * 60_000) };
        const preview = await client.previewReplay(window, 10);
        expect([preview.count, preview.sample]).toEqual([1, ['evt_2']]);
        const batch = await client.replayBatch(window, { limit: 10, through: preview.through ?? undefined });
        expect(batch.eventIds).toEqual(['evt_2']);
      } finally {
        await server.close();
      }
    },
  );

  it.skipIf(!backend.available)('refuses a window without both ends, backwards, or beside named ids, saying why', async () => {
    store = await backend.open();
    const api = createAdminApi({ store, token: TOKEN });
    const post = async (body: object) => {
      const answer = await api.handle({ method: 'POST', url: '/admin/api/replay', headers: auth, body: JSON.stringify(body) });
      return { status: answer.status, message: (JSON.parse(answer.body) as { error?: { message: string } }).error?.message };
    };
    expect(await post({ since: '2026-11-29T02:10:00Z', dryRun: true })).toEqual({
      status: 400,
      message: 'Invalid body: until: give both since and until.',
    });
    expect(await post({ since: '2026-11-29T02:40:00Z', until: '2026-11-29T02:10:00Z', dryRun: true })).toEqual({
      status: 400,
      message: 'Invalid body: until: must be after since.',
    });
    expect((await post({ eventIds: ['evt_1'], handler: 'crm' })).message).toBe(
      'Invalid body: handler: selects among events by state or time; leave it out with eventIds.',
    );
    expect((await post({})).message).toBe('Invalid body: status: give a status, a time window (since and until), or eventIds.');
  });
});
