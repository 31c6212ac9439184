// The issue notifier of serve (docs/admin.md#notifications): each new or reopened issue is POSTed once, signed with the
// default scheme, without its error text; a POST that failed is tried again; the configuration names the URL and the
// secret (file, then the variables over it), and a URL without a secret is refused.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { type IssueNotice, startIssueNotifier } from '../../src/service/issue-notifier.js';
import { resolveServiceConfig, ServiceConfigError } from '../../src/service/resolve-service-config.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getIssue, listIssues, replayIssue } from '../../src/store/issues.js';
import { putEvents } from '../helpers/inbox.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const SECRET = 'ops-hook-secret';
const silent = pino({ level: 'silent' });

describe('the issue notifier', () => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks | undefined;
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    if (store) await dispose(store);
    store = undefined;
  });

  it('posts each opening once, signed and without the error; tries a failed post again; a reopening is told again', {
    timeout: 60_000,
  }, async () => {
    store = await backends.find((b) => b.name === 'pglite')!.open();
    const s = store;
    const scheme = createDefaultScheme({ secrets: SECRET });
    const notices: IssueNotice[] = [];
    let refuseNext = 1;
    const server = await listen(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const rawBody = Buffer.concat(chunks);
          try {
            scheme.verify({ headers: req.headers as Record<string, string>, rawBody });
          } catch {
            res.writeHead(401).end();
            return;
          }
          if (refuseNext-- > 0) {
            res.writeHead(503).end();
            return;
          }
          notices.push(JSON.parse(rawBody.toString()) as IssueNotice);
          res.writeHead(204).end();
        });
      }),
    );
    hooks = createPayhooks({ database: s, logger: silent, worker: { pollIntervalMs: 20, maxAttempts: 1 } });
    let broken = true;
    hooks.on(
      'INVOICE_PAID',
      () => {
        if (broken) throw new RangeError('amount out of range for jane@example.com');
      },
      { name: 'ledger' },
    );
    await putEvents(s, [exampleEvent('INVOICE_PAID', { eventId: 'evt_notify_1' })]);
    await hooks.start();
    await waitFor(async () => (await listIssues(s)).length === 1, 'the issue recorded');
    const notifier = startIssueNotifier({
      store: s,
      url: `${server.url}/ops`,
      secret: SECRET,
      everyMs: 100,
      timeoutMs: 5000,
      logger: silent,
    });
    try {
      // The first POST is refused (503): the opening is given back and told at a later tick, once.
      await waitFor(() => notices.length === 1, 'the opening told');
      const [issue] = await listIssues(s);
      expect(notices[0]).toMatchObject({
        type: 'issue.opened',
        issue: { id: issue!.id, handler: 'ledger', errorClass: 'RangeError', state: 'open' },
      });
      expect(JSON.stringify(notices[0])).not.toContain('jane@example.com');
      expect(notices[0]!.issue).not.toHaveProperty('lastError');
      expect((await getIssue(s, issue!.id))?.notifiedAt).not.toBeNull();

      // Resolved by a replay that fails again: it reopens, and is told again as a reopening.
      await replayIssue(s, issue!.id);
      await waitFor(() => notices.length === 2, 'the reopening told');
      expect(notices[1]).toMatchObject({ type: 'issue.reopened', issue: { id: issue!.id, reopened: 1 } });
      broken = false;
      await replayIssue(s, issue!.id);
      await waitFor(async () => (await getIssue(s, issue!.id))?.unfinishedEvents === 0, 'the event done');
      // Several ticks later, nothing more was told.
      await new Promise((resolve) => setTimeout(resolve, 400));
      expect(notices).toHaveLength(2);
    } finally {
      await notifier.stop();
      await server.close();
    }
  });

  it('reads the URL and secret from the file, the variables over it; a URL without a secret is refused', async () => {
    const cwd = mkdtempSync(join(tmpdir(), 'payhooks-issue-notify-'));
    writeFileSync(
      join(cwd, 'payhooks.config.json'),
      JSON.stringify({ issues: { notify: { url: 'https://ops.example.com/a', secret: 'file-secret', everyMs: 2000 } } }),
    );
    const env = { PAYHOOKS_WEBHOOK_SECRET: 'whsec', PAYHOOKS_DATA_DIR: 'memory://' };
    const fromFile = await resolveServiceConfig({ env, cwd, simulatorSession: false });
    expect(fromFile.issues.notify).toEqual({ url: 'https://ops.example.com/a', secret: 'file-secret', everyMs: 2000, timeoutMs: 10_000 });
    const overridden = await resolveServiceConfig({
      env: { ...env, PAYHOOKS_ISSUES_NOTIFY_URL: 'https://ops.example.com/b', PAYHOOKS_ISSUES_NOTIFY_SECRET: 'env-secret' },
      cwd,
      simulatorSession: false,
    });
    expect(overridden.issues.notify).toMatchObject({ url: 'https://ops.example.com/b', secret: 'env-secret', everyMs: 2000 });
    const empty = mkdtempSync(join(tmpdir(), 'payhooks-issue-notify-'));
    const refused = resolveServiceConfig({
      env: { ...env, PAYHOOKS_ISSUES_NOTIFY_URL: 'https://ops.example.com/c' },
      cwd: empty,
      simulatorSession: false,
    });
    await expect(refused).rejects.toThrow(ServiceConfigError);
    await expect(refused).rejects.toThrow(/issues\.notify\.secret: is needed with notify\.url/);
    expect((await resolveServiceConfig({ env, cwd: empty, simulatorSession: false })).issues.notify.url).toBeUndefined();
  });
});
