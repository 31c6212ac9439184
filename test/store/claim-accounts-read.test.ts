// A store with one account claims through `claim_events_single` directly (accounts.ts `onlyAccount`), going by the
// accounts it read within the last ACCOUNTS_REREAD_MS: what this process changes with ensureAccounts counts at the next
// claim, and an account another process adds is claimed for once that time has passed.
import { setTimeout as sleep } from 'node:timers/promises';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { ACCOUNTS_REREAD_MS, ensureAccounts } from '../../src/store/accounts.js';
import { claimEvents } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { putUnorderedEvents } from '../helpers/inbox.js';
import { backends, dispose } from '../helpers/stores.js';

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
    await putUnorderedEvents(s, ['evt_d1', 'evt_d2'], 'default');
    // Read with the one account there is: the claim of that account.
    expect(await claim(s, 1)).toEqual(['default/evt_d1']);
    await ensureAccounts(s, [{ id: 'default' }, { id: 'gym-north' }]);
    await putUnorderedEvents(s, ['evt_n1'], 'gym-north');
    // Claimed as one account's, gym-north's event would wait behind the rest of default's.
    expect(await claim(s, 10)).toEqual(['default/evt_d2', 'gym-north/evt_n1']);
  });

  it.skipIf(!backend.available)('an account another process adds is claimed for once the accounts are read again', async () => {
    s = await backend.open();
    await putUnorderedEvents(s, ['evt_d1'], 'default');
    expect(await claim(s, 10)).toEqual(['default/evt_d1']);
    // As another process's ensureAccounts would: this process's store is not told.
    await sql`insert into ${sql.id(s.schema, 'accounts')} (id) values ('gym-south')`.execute(s.db);
    await putUnorderedEvents(s, ['evt_s1'], 'gym-south');
    await sleep(ACCOUNTS_REREAD_MS + 50);
    expect(await claim(s, 10)).toEqual(['gym-south/evt_s1']);
  });
});
