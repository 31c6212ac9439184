import type { Logger } from 'pino';
import { describeUrl } from '../internal/describe-url.js';
import { type PeriodicTask, runPeriodically } from '../internal/periodic.js';
import { createDefaultScheme } from '../signature/default-scheme.js';
import type { PayhooksDatabase } from '../store/database.js';
import { claimIssuesToNotify, type Issue, releaseIssueNotice } from '../store/issues.js';

/** What {@link startIssueNotifier} needs: `issues.notify` of the service configuration, and where to read issues. */
export interface IssueNotifierOptions {
  store: PayhooksDatabase;
  /** Where each opening is POSTed. */
  url: string;
  /** The secret the POST is signed with, in the default signature scheme (docs/signatures.md). */
  secret: string;
  /** How often it looks for openings not told yet. */
  everyMs: number;
  /** How long one POST may take. */
  timeoutMs: number;
  logger: Logger;
}

/** The body of a notice: which issue opened, and whether it was new or reopened (docs/admin.md#notifications). */
export interface IssueNotice {
  type: 'issue.opened' | 'issue.reopened';
  issue: Omit<Issue, 'lastError'>;
}

/**
 * Tells each new or reopened issue once, as a signed JSON POST to `url`: every `everyMs` it claims the openings not
 * told yet (one service claims each, also with several on one database), posts each, and gives back those whose POST
 * failed (no answer or not 2xx) to be tried at the next tick. The notice carries no error text: errors quote what a
 * handler saw, which may hold personal data; the receiver asks the console for the rest.
 *
 * @example
 * const notifier = startIssueNotifier({ store, url, secret, everyMs: 5000, timeoutMs: 10_000, logger });
 * await notifier.stop();
 */
export function startIssueNotifier(options: IssueNotifierOptions): PeriodicTask {
  const scheme = createDefaultScheme({ secrets: [options.secret] });
  const where = describeUrl(options.url);
  const post = async (issue: Issue, signal: AbortSignal) => {
    const { lastError: _withheld, ...rest } = issue;
    const notice: IssueNotice = { type: issue.reopened > 0 ? 'issue.reopened' : 'issue.opened', issue: rest };
    const rawBody = Buffer.from(JSON.stringify(notice));
    const response = await fetch(options.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...scheme.sign({ rawBody }) },
      body: rawBody,
      signal: AbortSignal.any([signal, AbortSignal.timeout(options.timeoutMs)]),
    });
    await response.body?.cancel().catch(() => undefined);
    if (!response.ok) throw new Error(`${where} answered ${response.status}`);
  };
  return runPeriodically(
    options.everyMs,
    'The issue notifier interval (issues.notify.everyMs)',
    async (signal) => {
      let claimed: Issue[];
      try {
        claimed = await claimIssuesToNotify(options.store);
      } catch (err) {
        options.logger.warn({ err }, 'issue notifier: could not read the issues to notify; trying again later');
        return;
      }
      for (const issue of claimed) {
        try {
          await post(issue, signal);
          options.logger.info({ issueId: issue.id, handler: issue.handler, to: where }, 'issue notifier: notified');
        } catch (err) {
          options.logger.warn({ err, issueId: issue.id, to: where }, 'issue notifier: the notice was not delivered; trying again later');
          await releaseIssueNotice(options.store, issue.id).catch(() => undefined);
        }
      }
    },
    { now: true, stopReason: 'the service is stopping' },
  );
}

/**
 * The notifier `issues.notify` of the service configuration asks for, started; undefined without a URL. Each new or
 * reopened issue is told once, by whichever process claims it (store/issues.ts), so it is safe in every process.
 */
export function issueNotifierFor(
  notify: { url?: string | undefined; secret?: string | undefined; everyMs: number; timeoutMs: number },
  store: PayhooksDatabase,
  logger: Logger,
): PeriodicTask | undefined {
  if (notify.url === undefined || notify.secret === undefined) return undefined;
  return startIssueNotifier({
    store,
    url: notify.url,
    secret: notify.secret,
    everyMs: notify.everyMs,
    timeoutMs: notify.timeoutMs,
    logger,
  });
}
