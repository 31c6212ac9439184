// `prune --account`: one account's finished history goes, the other accounts' and its own unfinished events stay.
import { afterEach, describe, expect, it } from 'vitest';
import { ensureAccounts } from '../../src/store/accounts.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { storeEvents } from '../../src/store/inbox.js';
import { countPrunableOfAccount, pruneAccount, pruneCutoff } from '../../src/store/maintenance.js';
import { markHandlerCompleted } from '../../src/store/outcomes.js';
import { backdate, setState } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';

const stored = (account: string, eventId: string) => ({
  account,
  eventId,
  eventType: 'CUSTOMER_UPDATED',
  resourceKey: null,
  rawBody: JSON.stringify({ eventId, eventType: 'CUSTOMER_UPDATED', data: {} }),
  headers: {},
});

describe.each(backends)('pruning one account ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)("deletes that account's old finished events only, with their runs; the ledger keeps them", async () => {
    const db = await backend.open();
    store = db;
    await ensureAccounts(db, [{ id: 'north' }, { id: 'south' }]);
    await storeEvents(db, [
      stored('north', 'n_old_done'),
      stored('north', 'n_old_dead'),
      stored('north', 'n_new_done'),
      stored('south', 's_old_done'),
    ]);
    for (const id of ['n_old_done', 'n_new_done', 's_old_done']) await setState(db, id, 'done');
    await setState(db, 'n_old_dead', 'dead');
    await markHandlerCompleted(db.db, { account: 'north', eventId: 'n_old_done' }, 'crm');
    await backdate(db, ['n_old_done', 'n_old_dead', 's_old_done'], new Date(Date.now() - 40 * 86_400_000).toISOString());

    const before = await pruneCutoff(db, 30 * 86_400_000);
    expect(await countPrunableOfAccount(db, 'north', before)).toBe(1);
    expect(await pruneAccount(db, 'north', before)).toBe(1);

    const left = await db.db.selectFrom('inbox_events').select(['account', 'event_id']).orderBy('event_id').execute();
    expect(left.map((row) => `${row.account}/${row.event_id}`)).toEqual(['north/n_new_done', 'north/n_old_dead', 'south/s_old_done']);
    const runs = await db.db.selectFrom('handler_runs').select('event_id').where('event_id', '=', 'n_old_done').execute();
    expect(runs).toEqual([]);
    const ledger = await db.db.selectFrom('event_ledger').select('event_id').where('account', '=', 'north').orderBy('event_id').execute();
    expect(ledger.map((row) => row.event_id)).toEqual(['n_new_done', 'n_old_dead', 'n_old_done']);
    // Nothing left to prune: a second run deletes nothing.
    expect(await pruneAccount(db, 'north', before)).toBe(0);
  });
});
