// Failures grouped into issues (migrations/020), on PostgreSQL and PGlite: the worker's outcome statement counts each
// failed attempt into the issue of (handler, error class, event type); operators move the issue's state; a failure
// after it was resolved reopens it; "replay affected" re-queues exactly the affected events that are not done.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import {
  claimIssuesToNotify,
  countOpenIssues,
  getIssue,
  issueEvents,
  listIssues,
  replayIssue,
  setIssueState,
} from '../../src/store/issues.js';
import { DeadLetterError } from '../../src/worker/handler-errors.js';
import { putEvents, statuses } from '../helpers/inbox.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

class LedgerClosedError extends Error {}

describe.each(backends)('issues on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await dispose(store);
    store = undefined;
  });

  it.skipIf(!backend.available)(
    'groups by handler, error class and event type; moves states; reopens; replays exactly the unfinished affected events',
    { timeout: 90_000 },
    async () => {
      store = await backend.open();
      const s = store;
      hooks = createPayhooks({
        database: s,
        logger: pino({ level: 'silent' }),
        worker: { pollIntervalMs: 20, backoff: { baseMs: 5, maxMs: 10 }, maxAttempts: 2 },
      });
      let ledgerFixed = false;
      let crmBroken = true;
      hooks.on(
        'INVOICE_PAID',
        (event) => {
          if (ledgerFixed) return;
          // Two classes from one handler: two issues.
          if (event.eventId.endsWith('7')) throw new TypeError('cannot read amount');
          throw new DeadLetterError('ledger refused', { cause: new LedgerClosedError('account 4410 is closed') });
        },
        { name: 'ledger' },
      );
      hooks.on('INVOICE_PAID', () => undefined, { name: 'audit' });
      hooks.on(
        'CUSTOMER_CREATED',
        () => {
          if (crmBroken) throw new Error('crm down');
        },
        { name: 'crm' },
      );
      const paid = Array.from({ length: 30 }, (_, i) =>
        withOwnResource(exampleEvent('INVOICE_PAID', { eventId: `evt_paid_${i}` }), `p${i}`),
      );
      const created = Array.from({ length: 3 }, (_, i) =>
        withOwnResource(exampleEvent('CUSTOMER_CREATED', { eventId: `evt_cust_${i}` }), `c${i}`),
      );
      await putEvents(s, [...paid, ...created]);
      await hooks.start();
      await waitFor(async () => {
        const all = Object.values(await statuses(s));
        return all.length === 33 && all.every((status) => status === 'dead');
      }, 'every event dead');

      const issues = await listIssues(s);
      const key = (i: { handler: string; errorClass: string; eventType: string }) => `${i.handler} ${i.errorClass} ${i.eventType}`;
      expect(issues.map(key).sort()).toEqual([
        'crm Error CUSTOMER_CREATED',
        'ledger LedgerClosedError INVOICE_PAID',
        'ledger TypeError INVOICE_PAID',
      ]);
      const byKey = Object.fromEntries(issues.map((i) => [key(i), i]));
      const ledger = byKey['ledger LedgerClosedError INVOICE_PAID']!;
      const typeErrors = byKey['ledger TypeError INVOICE_PAID']!;
      const crm = byKey['crm Error CUSTOMER_CREATED']!;
      // evt_paid_7 and evt_paid_17, evt_paid_27 throw TypeError; a dead letter is not retried, the plain errors are (2 attempts).
      expect([ledger.affectedEvents, ledger.failures, ledger.unfinishedEvents]).toEqual([27, 27, 27]);
      expect([typeErrors.affectedEvents, typeErrors.failures]).toEqual([3, 6]);
      expect([crm.affectedEvents, crm.failures]).toEqual([3, 6]);
      expect(issues.every((i) => i.state === 'open' && i.firstSeenAt <= i.lastSeenAt)).toBe(true);
      expect(ledger.lastError).toContain('ledger refused');
      expect(await countOpenIssues(s)).toBe(3);
      expect((await issueEvents(s, typeErrors.id)).map((e) => e.eventId).sort()).toEqual(['evt_paid_17', 'evt_paid_27', 'evt_paid_7']);

      // States: acknowledge from open; an unknown id is not found; acknowledging a resolved issue is not allowed.
      expect(await setIssueState(s, ledger.id, 'acknowledge')).toMatchObject({ changed: true, issue: { state: 'acknowledged' } });
      expect(await setIssueState(s, '999999', 'acknowledge')).toEqual({ changed: false, reason: 'not-found' });
      expect(await setIssueState(s, 'x', 'resolve')).toEqual({ changed: false, reason: 'not-found' });
      expect(await setIssueState(s, typeErrors.id, 'ignore')).toMatchObject({ changed: true, issue: { state: 'ignored' } });
      expect(await countOpenIssues(s)).toBe(1);

      // The notifier is handed each opening once.
      const told = await claimIssuesToNotify(s);
      expect(told.map((i) => i.id)).toEqual([crm.id]);
      expect(await claimIssuesToNotify(s)).toEqual([]);

      // Replay affected after the fix: exactly the ledger issue's 27 events, all done; the issue resolved; the other
      // issues' events untouched (the three TypeError ones stay dead).
      ledgerFixed = true;
      expect(await replayIssue(s, ledger.id, { dryRun: true })).toEqual({ count: 27, eventIds: [], state: 'acknowledged' });
      const replay = await replayIssue(s, ledger.id);
      expect(replay?.count).toBe(27);
      expect(replay?.eventIds).toHaveLength(27);
      expect(replay?.state).toBe('resolved');
      await waitFor(async () => (await getIssue(s, ledger.id))?.unfinishedEvents === 0, 'the ledger issue finished');
      const after = await statuses(s);
      expect(
        Object.entries(after)
          .filter(([, status]) => status === 'done')
          .map(([id]) => id).length,
      ).toBe(27);
      expect(['evt_paid_7', 'evt_paid_17', 'evt_paid_27'].map((id) => after[id])).toEqual(['dead', 'dead', 'dead']);
      expect((await getIssue(s, ledger.id))?.state).toBe('resolved');
      // Nothing left to replay: a second run finds none.
      expect(await replayIssue(s, ledger.id, { dryRun: true })).toMatchObject({ count: 0 });

      // Resolved, then it recurs: the crm issue reopens (counted once more, to be told again); the ignored one stays so.
      expect(await setIssueState(s, crm.id, 'resolve')).toMatchObject({ changed: true, issue: { state: 'resolved' } });
      const crmReplay = await replayIssue(s, crm.id);
      expect(crmReplay?.eventIds).toHaveLength(3);
      await waitFor(async () => (await getIssue(s, crm.id))?.state === 'open', 'the crm issue reopened');
      await waitFor(async () => (await getIssue(s, crm.id))?.failures === 12, 'the crm failures counted');
      const reopened = (await getIssue(s, crm.id))!;
      expect(reopened.reopened).toBe(1);
      expect(reopened.notifiedAt).toBeNull();
      expect((await claimIssuesToNotify(s)).map((i) => i.id)).toEqual([crm.id]);
      // The ledger's fix fixed its TypeErrors too: replayed from ignored, they end done, the issue resolved, uncounted.
      expect((await replayIssue(s, typeErrors.id))?.eventIds).toHaveLength(3);
      await waitFor(async () => (await getIssue(s, typeErrors.id))?.unfinishedEvents === 0, 'the TypeError events done');
      expect(await getIssue(s, typeErrors.id)).toMatchObject({ state: 'resolved', failures: 6, reopened: 0 });
      expect(await setIssueState(s, typeErrors.id, 'ignore')).toMatchObject({ changed: true });
      expect(await setIssueState(s, typeErrors.id, 'acknowledge')).toEqual({ changed: false, reason: 'not-allowed', state: 'ignored' });

      // Fixed for good: the crm issue's replay ends every event done and leaves it resolved.
      crmBroken = false;
      await replayIssue(s, crm.id);
      await waitFor(async () => (await getIssue(s, crm.id))?.unfinishedEvents === 0, 'the crm events done');
      expect((await getIssue(s, crm.id))?.state).toBe('resolved');
      expect(await listIssues(s, { state: 'resolved' })).toHaveLength(2);
    },
  );

  it.skipIf(!backend.available)(
    "held to an account: only the issues with failures in it, counted in it alone; replay re-queues that account's events only",
    { timeout: 90_000 },
    async () => {
      store = await backend.open();
      const s = store;
      hooks = createPayhooks({
        accounts: ['default', 'gym-north', 'gym-south'].map((id) => ({ id, secret: `secret-${id}` })),
        database: s,
        logger: pino({ level: 'silent' }),
        worker: { pollIntervalMs: 20, maxAttempts: 1 },
      });
      let fixed = false;
      hooks.on(
        'INVOICE_PAID',
        () => {
          if (!fixed) throw new LedgerClosedError('ledger closed');
        },
        { name: 'ledger' },
      );
      await hooks.ready();
      const paid = (prefix: string, count: number) =>
        Array.from({ length: count }, (_, i) =>
          withOwnResource(exampleEvent('INVOICE_PAID', { eventId: `evt_${prefix}_${i}` }), `${prefix}${i}`),
        );
      await putEvents(s, paid('n', 3), 'gym-north');
      // The same eventIds in two accounts: two events, each counted in its own account.
      await putEvents(s, paid('n', 2), 'gym-south');
      await hooks.start();
      const dead = async () => (await s.db.selectFrom('inbox_event_states').select('status').where('status', '=', 'dead').execute()).length;
      await waitFor(async () => (await dead()) === 5, 'every event dead');

      const [all] = await listIssues(s);
      expect([all!.affectedEvents, all!.affectedAccounts, all!.unfinishedEvents, all!.failures]).toEqual([5, 2, 5, 5]);
      const [south] = await listIssues(s, { account: 'gym-south' });
      expect([south!.id, south!.affectedEvents, south!.affectedAccounts, south!.unfinishedEvents]).toEqual([all!.id, 2, 1, 2]);
      expect(await listIssues(s, { account: 'default' })).toEqual([]);

      // One issue held to an account counts as the list does; the failures and times stay the issue's.
      expect(await getIssue(s, all!.id, { account: 'gym-south' })).toEqual(south);
      expect(await getIssue(s, all!.id, { account: 'gym-north' })).toMatchObject({ affectedEvents: 3, affectedAccounts: 1, failures: 5 });
      expect(await getIssue(s, all!.id, { account: 'default' })).toMatchObject({
        affectedEvents: 0,
        affectedAccounts: 0,
        unfinishedEvents: 0,
      });
      expect(await getIssue(s, all!.id)).toEqual(all);
      expect((await issueEvents(s, all!.id, { account: 'gym-south' })).map((e) => `${e.account} ${e.eventId}`)).toEqual([
        'gym-south evt_n_0',
        'gym-south evt_n_1',
      ]);

      fixed = true;
      expect(await replayIssue(s, all!.id, { account: 'gym-south', dryRun: true })).toMatchObject({ count: 2 });
      expect((await replayIssue(s, all!.id, { account: 'gym-south' }))?.eventIds).toHaveLength(2);
      await waitFor(async () => (await getIssue(s, all!.id, { account: 'gym-south' }))?.unfinishedEvents === 0, "gym-south's events done");
      expect(await getIssue(s, all!.id, { account: 'gym-north' })).toMatchObject({ affectedEvents: 3, unfinishedEvents: 3 });
      expect(await dead()).toBe(3);
    },
  );
});
