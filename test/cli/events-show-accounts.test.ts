// `payhooks events show ID` when that eventId is stored in several accounts (issue 48, item 6): show prints one event
// as one JSON object, so without --account it refuses, naming the accounts, rather than print the first received; with
// --account it prints that account's. On the real server through the command line; on PGlite through the console's
// find route and the client the command line uses beside a running serve (the same answer, the same refusal).
import { createServer } from 'node:http';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminClient } from '../../src/console/admin-client.js';
import { createPayhooks } from '../../src/payhooks.js';
import { ensureAccounts } from '../../src/store/accounts.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { storeEvent } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { runInProcess } from '../helpers/cli.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { dispose } from '../helpers/stores.js';

const TOKEN = 'Kc5Khp-5T-08sa41x3vuO2dG9liU0Spms9DJtMqv';
const ACCOUNTS = [{ id: 'default' }, { id: 'gym-north' }, { id: 'gym-south' }];

/**
 * evt_shared in gym-north (first) and gym-south; evt_south in gym-south alone; the sender's id whevt_shared on
 * evt_sent_north (first) and evt_sent_south, each of its own account (two organizations' senders may number alike).
 */
async function seed(store: PayhooksDatabase): Promise<void> {
  await ensureAccounts(store, ACCOUNTS);
  for (const [eventId, account, senderId] of [
    ['evt_shared', 'gym-north', undefined],
    ['evt_shared', 'gym-south', undefined],
    ['evt_south', 'gym-south', undefined],
    ['evt_sent_north', 'gym-north', 'whevt_shared'],
    ['evt_sent_south', 'gym-south', 'whevt_shared'],
  ] as const) {
    const body = { eventId, eventType: 'INVOICE_PAID', data: { account } };
    const headers: Record<string, string> = senderId === undefined ? {} : { 'x-webhook-event-id': senderId };
    await storeEvent(store, { eventId, account, eventType: 'INVOICE_PAID', resourceKey: null, rawBody: JSON.stringify(body), headers });
  }
}

describe.skipIf(!pgUrl)('events show of an eventId several accounts hold, on the real server', () => {
  const schema = uniqueSchema('show_accounts');
  const env = { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema };
  let store: PayhooksDatabase;
  beforeAll(async () => {
    store = await openDatabase({ url: pgUrl!, schema });
    await migrate(store);
    await seed(store);
  });
  afterAll(async () => {
    await dispose(store);
  });

  it('refuses without --account (plain and --json), naming the accounts; prints nothing on stdout', { timeout: 60_000 }, async () => {
    for (const flags of [[], ['--json']]) {
      const refused = await runInProcess(['events', 'show', 'evt_shared', ...flags], env);
      expect(refused.code).toBe(1);
      expect(refused.stdout).toBe('');
      expect(refused.stderr.trim()).toBe(
        'payhooks: Event evt_shared is stored in 2 accounts (gym-north, gym-south): name one with --account, e.g. payhooks events show evt_shared --account gym-north.',
      );
    }
  });

  it("with --account prints that account's event; an eventId of one account needs none", { timeout: 60_000 }, async () => {
    for (const account of ['gym-north', 'gym-south']) {
      const shown = await runInProcess(['events', 'show', 'evt_shared', '--account', account], env);
      expect(shown.code).toBe(0);
      const event = JSON.parse(shown.stdout);
      expect([event.account, event.eventId, JSON.parse(event.rawBody).data.account]).toEqual([account, 'evt_shared', account]);
    }
    const single = await runInProcess(['events', 'show', 'evt_south'], env);
    expect(single.code).toBe(0);
    expect(JSON.parse(single.stdout)).toMatchObject({ account: 'gym-south', eventId: 'evt_south' });
    const elsewhere = await runInProcess(['events', 'show', 'evt_south', '--account', 'gym-north'], env);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr).toContain('No stored event with eventId evt_south in account gym-north');
  });

  it("refuses a sender's id that events of several accounts carry, and shows each account's with --account", {
    timeout: 60_000,
  }, async () => {
    const refused = await runInProcess(['events', 'show', 'whevt_shared'], env);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr.trim()).toBe(
      "payhooks: The sender's id whevt_shared names events of 2 accounts (gym-north, gym-south): name one with --account, e.g. payhooks events show whevt_shared --account gym-north.",
    );
    for (const [account, eventId] of [
      ['gym-north', 'evt_sent_north'],
      ['gym-south', 'evt_sent_south'],
    ] as const) {
      const shown = await runInProcess(['events', 'show', 'whevt_shared', '--account', account], env);
      expect(shown.code).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({ account, eventId });
      expect(shown.stderr.trim()).toBe("whevt_shared: found by its sender's x-webhook-event-id");
    }
  });
});

describe('the console find route on PGlite, read by the client the command line uses beside serve', () => {
  it("names every account that holds the eventId or the sender's id, first received first", { timeout: 60_000 }, async () => {
    const hooks = createPayhooks({
      accounts: ACCOUNTS.map(({ id }) => ({ id, secret: `secret-${id}` })),
      database: { dataDir: 'memory://' },
      logger: pino({ level: 'silent' }),
    });
    const store = await hooks.ready();
    await seed(store);
    const admin = hooks.admin({ token: TOKEN }).node();
    const server = await listen(createServer((req, res) => void admin(req, res)));
    try {
      const client = createAdminClient({ url: server.url, token: TOKEN });
      expect(await client.find('evt_shared')).toEqual({
        kind: 'event',
        account: 'gym-north',
        eventId: 'evt_shared',
        accounts: ['gym-north', 'gym-south'],
      });
      expect(await client.find('evt_shared', 'gym-south')).toEqual({
        kind: 'event',
        account: 'gym-south',
        eventId: 'evt_shared',
        accounts: ['gym-south'],
      });
      expect(await client.find('evt_south')).toMatchObject({ account: 'gym-south', accounts: ['gym-south'] });
      expect(await client.find('whevt_shared')).toEqual({
        kind: 'sender-id',
        account: 'gym-north',
        eventId: 'evt_sent_north',
        header: 'x-webhook-event-id',
        accounts: ['gym-north', 'gym-south'],
      });
      expect(await client.find('whevt_shared', 'gym-south')).toMatchObject({ eventId: 'evt_sent_south', accounts: ['gym-south'] });
    } finally {
      await server.close();
      await hooks.stop();
    }
  });
});
