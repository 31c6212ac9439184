import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { runBackfill } from '../../src/sync/backfill.js';
import { startApiServer } from '../helpers/api-server.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { backends, dispose } from '../helpers/stores.js';
import { customer } from '../client/support.js';

describe('backfill against an API that ignores skip (the same page every time)', () => {
  it('stops at the first page that brings nothing new, with the cursor where the last new page left it', { timeout: 60_000 }, async () => {
    const server = await startApiServer();
    const page = Array.from({ length: 100 }, (_, n) => ({ ...customer, id: `cus_stuck_${n}`, username: `stuck${n}` }));
    // Past 20 requests it gives up, so that a walk that does not stop by itself fails this test rather than hang it.
    server.route('GET', '/v1/customers', () =>
      server.requests.length > 20 ? { status: 400, json: { error: { message: 'cut off by the test' } } } : { json: { data: page } },
    );
    const store = await backends.find((b) => b.name === 'pglite')!.open();
    const mirrorSchema = `${store.schema}_mirror`;
    try {
      const api = createClient({ apiKey: 'sk_test_stuck', environment: server.url, rateLimit: false });
      await expect(runBackfill({ store, api, mirrorSchema, resources: ['customers'] })).rejects.toThrow(
        'payhooks: Backfill of customers stopped, the cursor left at 100: The list page at skip=100 holds only records already read ' +
          '(the first: cus_stuck_0): the service seems to ignore skip. The walk stopped after 2 requests rather than read the same records again.',
      );
      expect(server.requests).toHaveLength(2);
      const { rows } = await sql<{ next_skip: number; written: number }>`
        select next_skip, written from ${sql.id(mirrorSchema, 'backfill_cursors')} where resource = 'customers'`.execute(
        store.db.withoutPlugins(),
      );
      expect(rows).toEqual([{ next_skip: 100, written: 100 }]);
    } finally {
      await server.close();
      await dropMirrorSchema(store, mirrorSchema);
      await dispose(store);
    }
  });
});
