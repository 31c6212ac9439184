// A store with one account claims through `claim_events_single` directly (accounts.ts `onlyAccount`), going by the
// accounts it read within the last ACCOUNTS_REREAD_MS: what this process changes with ensureAccounts counts at the next
// claim, and an account another process adds is claimed for once that time has passed.
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { ACCOUNTS_REREAD_MS, ensureAccounts } from '../../src/store/accounts.js';
import { claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { storeEvents } from '../../src/store/inbox.js';
import { backends, dispose } from '../helpers/stores.js';

/** Stores INVOICE_PAID events of these ids in `account`, without a resource (one claim may take them all). */
async function store(s: PayhooksDatabase, account: string, ids: readonly string[]): Promise<void> {
  await storeEvents(
    s,
    ids.map((eventId) => ({
      account,
      eventId,
      eventType: 'INVOICE_PAID',
      resourceKey: null,
      rawBody: JSON.stringify(exampleEvent('INVOICE_PAID', { eventId })),
      headers: {},
    })),
  );
}

/** Claims up to `limit` due events; resolves to their keys, `account/eventId`, sorted. */
async function claim(s: PayhooksDatabase, limit: number): Promise<string[]> {
  const claimed = await claimEvents(s, { workerId: 'accounts-read', limit, leaseMs: 60_000 });
  return claimed.map((event) => `${event.account}/${event.eventId}`).sort();
}

describe.each(backends)('the claim and the accounts it read ($name)', (backend) => {
  let s: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (s) await dispose(s);
    s = undefined;
  });

  it.skipIf(!backend.available)('an account this process adds is claimed for at the next claim', async () => {
    s = await backend.open();
    await store(s, 'default', ['evt_d1', 'evt_d2']);
    // Read with the one account there is: the claim of that account.
    expect(await claim(s, 1)).toEqual(['default/evt_d1']);
    await ensureAccounts(s, [{ id: 'default' }, { id: 'gym-north' }]);
    await store(s, 'gym-north', ['evt_n1']);
    // Claimed as one account's, gym-north's event would wait behind the rest of default's.
    expect(await claim(s, 10)).toEqual(['default/evt_d2', 'gym-north/evt_n1']);
  });

  it.skipIf(!backend.available)('an account another process adds is claimed for once the accounts are read again', async () => {
    s = await backend.open();
    await store(s, 'default', ['evt_d1']);
    expect(await claim(s, 10)).toEqual(['default/evt_d1']);
    // As another process's ensureAccounts would: this process's store is not told.
    await sql`insert into ${sql.id(s.schema, 'accounts')} (id) values ('gym-south')`.execute(s.db);
    await store(s, 'gym-south', ['evt_s1']);
    await sleep(ACCOUNTS_REREAD_MS + 50);
    expect(await claim(s, 10)).toEqual(['gym-south/evt_s1']);
  });
});
