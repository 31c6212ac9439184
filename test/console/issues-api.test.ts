// The console's issue routes (issue-routes.ts) over real HTTP on loopback, and the client the command line uses beside a
// running serve (issues-client.ts) against them: answers, masking, and every refusal with its status and reason.
import { createServer } from 'node:http';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AdminApiError } from '../../src/console/admin-client.js';
import { createIssuesClient } from '../../src/console/issues-client.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks } from '../../src/payhooks.js';
import { putEvents, statuses } from '../helpers/inbox.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const TOKEN = 'Kc5Khp-5T-08sa41x3vuO2dG9liU0Spms9DJtMqv';

describe('the console issue routes', () => {
  it('list, show, act and replay; masked unless revealed; 400, 404 and 409 with their reasons; the client reads them', {
    timeout: 90_000,
  }, async () => {
    const hooks = createPayhooks({
      database: { dataDir: 'memory://' },
      logger: pino({ level: 'silent' }),
      worker: { pollIntervalMs: 20, maxAttempts: 1 },
    });
    let fixed = false;
    hooks.on(
      'INVOICE_PAID',
      () => {
        if (!fixed) throw new RangeError('ledger refused the payment of jane.doe@example.com');
      },
      { name: 'forward:erp' },
    );
    const store = await hooks.ready();
    await putEvents(
      store,
      Array.from({ length: 4 }, (_, i) => withOwnResource(exampleEvent('INVOICE_PAID', { eventId: `evt_api_${i}` }), `${i}`)),
    );
    await hooks.start();
    await waitFor(async () => Object.values(await statuses(store)).filter((s) => s === 'dead').length === 4, 'all dead');
    const admin = hooks.admin({ token: TOKEN }).node();
    const server = await listen(createServer((req, res) => void admin(req, res)));
    const ask = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.url}/admin/api${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      // biome-ignore lint/suspicious/noExplicitAny: the answers' shapes are what the assertions check
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };
    try {
      const list = await ask('GET', '/issues');
      expect(list.status).toBe(200);
      expect(list.body.issues).toHaveLength(1);
      const issue = list.body.issues[0];
      expect(issue).toMatchObject({ handler: 'forward:erp', errorClass: 'RangeError', eventType: 'INVOICE_PAID', state: 'open' });
      expect([issue.affectedEvents, issue.affectedAccounts, issue.unfinishedEvents, issue.failures]).toEqual([4, 1, 4, 4]);
      // Without the sink registry (hooks.admin in an app), every name is a handler's.
      expect(issue.source).toEqual({ kind: 'handler', name: 'forward:erp' });
      expect(issue.lastError).not.toContain('jane.doe@example.com');
      expect((await ask('GET', '/issues?reveal=true')).body.issues[0].lastError).toContain('jane.doe@example.com');

      const shown = await ask('GET', `/issues/${issue.id}?limit=3`);
      expect(shown.body.events.map((e: { eventId: string; account: string }) => e.account)).toEqual(['default', 'default', 'default']);
      const next = await ask('GET', `/issues/${issue.id}?after=${shown.body.events[2].position}`);
      expect(next.body.events).toHaveLength(1);
      expect(new Set([...shown.body.events, ...next.body.events].map((e: { eventId: string }) => e.eventId)).size).toBe(4);
      expect((await ask('GET', '/issues?state=resolved')).body.issues).toEqual([]);
      expect((await ask('GET', '/issues?account=other')).body.issues).toEqual([]);

      // Refusals: a bad filter, an unknown issue, a move its state does not allow.
      const bad = await ask('GET', '/issues?state=closed');
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toMatch(/^Invalid query: state: /);
      expect((await ask('GET', '/issues?after=x')).status).toBe(400);
      expect((await ask('GET', `/issues/${issue.id}?after=evt_1`)).status).toBe(400);
      expect(await ask('GET', '/issues/424242')).toEqual({ status: 404, body: { error: { message: 'No issue #424242.' } } });
      expect((await ask('POST', '/issues/424242/resolve', {})).status).toBe(404);
      expect((await ask('POST', '/issues/424242/replay', {})).status).toBe(404);
      expect((await ask('POST', `/issues/${issue.id}/replay`, { dryRun: 'yes' })).status).toBe(400);
      expect((await ask('POST', `/issues/${issue.id}/ignore`, {})).body.issue.state).toBe('ignored');
      const refused = await ask('POST', `/issues/${issue.id}/acknowledge`, {});
      expect(refused.status).toBe(409);
      expect(refused.body.error.message).toBe(`Issue #${issue.id} is ignored: acknowledge applies to an issue that is open, acknowledged.`);
      expect((await ask('GET', '/issues')).status).toBe(200);

      // The command line's client reads the same answers (dates revived), and tells a refusal by its status.
      const client = createIssuesClient({ url: server.url, token: TOKEN });
      const [listed] = await client.list({ state: 'ignored' });
      expect(listed).toMatchObject({ id: issue.id, affectedEvents: 4, lastError: expect.stringContaining('jane.doe@example.com') });
      expect(listed!.firstSeenAt).toBeInstanceOf(Date);
      expect(await client.show('424242', {})).toBeUndefined();
      expect(await client.replay('424242', {})).toBeUndefined();
      await expect(client.act(issue.id, 'acknowledge')).rejects.toMatchObject({ status: 409 });
      await expect(client.act(issue.id, 'acknowledge')).rejects.toBeInstanceOf(AdminApiError);
      expect(await client.replay(issue.id, { dryRun: true })).toEqual({ count: 4, eventIds: [], state: 'ignored' });
      fixed = true;
      const replayed = await client.replay(issue.id, {});
      expect([replayed?.count, replayed?.eventIds.length, replayed?.state]).toEqual([4, 4, 'resolved']);
      await waitFor(async () => (await client.show(issue.id, {}))?.issue.unfinishedEvents === 0, 'the events done');
      expect((await client.show(issue.id, { unfinished: true }))?.events).toEqual([]);
    } finally {
      await server.close();
      await hooks.stop();
    }
  });

  it("held to an account: list and detail count that account's events alone, replay re-queues only them; so does the client", {
    timeout: 90_000,
  }, async () => {
    const hooks = createPayhooks({
      accounts: ['gym-north', 'gym-south'].map((id) => ({ id, secret: `secret-${id}` })),
      database: { dataDir: 'memory://' },
      logger: pino({ level: 'silent' }),
      worker: { pollIntervalMs: 20, maxAttempts: 1 },
    });
    let fixed = false;
    hooks.on(
      'INVOICE_PAID',
      () => {
        if (!fixed) throw new RangeError('ledger closed');
      },
      { name: 'ledger' },
    );
    const store = await hooks.ready();
    const paid = (count: number) =>
      Array.from({ length: count }, (_, i) => withOwnResource(exampleEvent('INVOICE_PAID', { eventId: `evt_acc_${i}` }), `${i}`));
    await putEvents(store, paid(3), 'gym-north');
    await putEvents(store, paid(2), 'gym-south');
    await hooks.start();
    // By account and eventId: the same eventIds are stored in both accounts.
    const dead = async () =>
      (await store.db.selectFrom('inbox_event_states').select('status').where('status', '=', 'dead').execute()).length;
    await waitFor(async () => (await dead()) === 5, 'all five dead');
    const admin = hooks.admin({ token: TOKEN }).node();
    const server = await listen(createServer((req, res) => void admin(req, res)));
    const ask = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${server.url}/admin/api${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      // biome-ignore lint/suspicious/noExplicitAny: the answers' shapes are what the assertions check
      return { status: response.status, body: (await response.json()) as Record<string, any> };
    };
    const counts = (issue: { affectedEvents: number; affectedAccounts: number; unfinishedEvents: number }) => [
      issue.affectedEvents,
      issue.affectedAccounts,
      issue.unfinishedEvents,
    ];
    try {
      const [all] = (await ask('GET', '/issues')).body.issues;
      expect(counts(all)).toEqual([5, 2, 5]);
      const [south] = (await ask('GET', '/issues?account=gym-south')).body.issues;
      expect([south.id, ...counts(south)]).toEqual([all.id, 2, 1, 2]);

      const shown = await ask('GET', `/issues/${all.id}?account=gym-south`);
      expect(shown.status).toBe(200);
      expect(counts(shown.body.issue)).toEqual([2, 1, 2]);
      expect(shown.body.events.map((e: { account: string }) => e.account)).toEqual(['gym-south', 'gym-south']);
      expect(counts((await ask('GET', `/issues/${all.id}`)).body.issue)).toEqual([5, 2, 5]);

      const client = createIssuesClient({ url: server.url, token: TOKEN });
      expect(counts((await client.show(all.id, { account: 'gym-north' }))!.issue)).toEqual([3, 1, 3]);
      expect((await client.list({ account: 'gym-north' })).map(counts)).toEqual([[3, 1, 3]]);

      expect((await ask('POST', `/issues/${all.id}/replay`, { dryRun: true, account: 'gym-south' })).body.count).toBe(2);
      fixed = true;
      const replayed = await ask('POST', `/issues/${all.id}/replay`, { account: 'gym-south' });
      expect(replayed.body.replayed).toBe(2);
      await waitFor(async () => (await ask('GET', `/issues/${all.id}?account=gym-south`)).body.issue.unfinishedEvents === 0, 'south done');
      expect(counts((await ask('GET', `/issues/${all.id}?account=gym-north`)).body.issue)).toEqual([3, 1, 3]);
      expect(await dead()).toBe(3);
    } finally {
      await server.close();
      await hooks.stop();
    }
  });
});
