import { type Command, Option } from 'commander';
import { type AffectedEvent, type Issue, ISSUE_ACTIONS, ISSUE_STATES, type IssueAction, type IssueState } from '../store/issues.js';
import { handlerSource } from '../sync/sink-registry.js';
import { SilentFailure, UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { confirmBulk } from './confirm-bulk.js';
import { countOf, printable, printableJson, sampleOf, table } from './format.js';
import { positiveInt } from './parse-options.js';
import { withIssueDesk } from './issue-desk.js';

/** The issue as `--json` prints it: the store's fields and where its failures come from (a handler or a sink). */
const described = (issue: Issue) => ({ ...issue, source: handlerSource(issue.handler) });

/** "handler ledger" or "sink forward erp": the first column a reader needs. */
function sourceText(issue: Issue): string {
  const source = handlerSource(issue.handler);
  return source.kind === 'sink' ? `sink ${source.prefix} ${source.name}` : `handler ${source.name}`;
}

/**
 * Adds `payhooks issues list|show|ack|resolve|ignore|replay`: failures grouped by (handler or sink, error class, event
 * type) (docs/cli.md#issues).
 */
export function addIssuesCommands(program: Command, ctx: CommandContext): void {
  const issues = program
    .command('issues')
    .description('failures grouped by handler or sink, error class and event type: list, show, acknowledge, resolve, ignore, replay');
  issues
    .command('list')
    .description('list issues, the most recently failing first')
    .addOption(new Option('--state <state>', 'only issues in this state').choices(ISSUE_STATES))
    .option('--handler <name>', 'only the issues of this handler (a sink: its recorded name, e.g. forward:erp)')
    .option('--type <type>', 'only issues of this event type')
    .option('--account <id>', 'only issues with events of this account, counted in it alone')
    .option('--limit <n>', 'at most this many', positiveInt('--limit'), 100)
    .option('--json', 'print one JSON array')
    .action(async (opts: { state?: IssueState; handler?: string; type?: string; account?: string; limit: number; json?: boolean }) => {
      const rows = await withIssueDesk(ctx.env('issues'), (desk) =>
        desk.list({ state: opts.state, handler: opts.handler, eventType: opts.type, account: opts.account, limit: opts.limit }),
      );
      if (opts.json) return ctx.out(printableJson(JSON.stringify(rows.map(described), null, 2)));
      if (rows.length === 0) return ctx.out(opts.state ? `no ${opts.state} issues` : 'no issues');
      await ctx.out(issuesTable(rows));
    });
  issues
    .command('show')
    .description('show one issue: its counts, last error and affected events (oldest first)')
    .argument('<id>', 'the number issues list shows')
    .option('--unfinished', 'only the affected events that are not done (what replay would re-queue)')
    .option('--account <id>', "only this account's events, and the issue's event counts in it alone")
    .option('--limit <n>', 'at most this many events', positiveInt('--limit'), 20)
    .option('--json', 'print {"issue": …, "events": […]}')
    .action(async (id: string, opts: { unfinished?: boolean; account?: string; limit: number; json?: boolean }) => {
      const found = await withIssueDesk(ctx.env('issues'), (desk) =>
        desk.show(id, { unfinished: opts.unfinished, account: opts.account, limit: opts.limit }),
      );
      if (!found) throw new UsageError(`No issue #${id}.`);
      if (opts.json) return ctx.out(printableJson(JSON.stringify({ issue: described(found.issue), events: found.events }, null, 2)));
      await ctx.out(issueText(found.issue, found.events, opts.limit));
    });
  for (const [command, action, done] of [
    ['ack', 'acknowledge', 'acknowledged'],
    ['resolve', 'resolve', 'resolved'],
    ['ignore', 'ignore', 'ignored'],
  ] as const)
    issues
      .command(command)
      .description(ACTION_HELP[action])
      .argument('<id>')
      .option('--json', 'print the issue after it as JSON')
      .action(async (id: string, opts: { json?: boolean }) => {
        const change = await withIssueDesk(ctx.env('issues'), (desk) => desk.act(id, action));
        if (!change.changed && change.reason === 'not-found') throw new UsageError(`No issue #${id}.`);
        if (!change.changed)
          throw new UsageError(
            `Issue #${id} is ${change.state}: ${command} applies to an issue that is ${ISSUE_ACTIONS[action].from.join(', ')}.`,
          );
        if (opts.json) return ctx.out(printableJson(JSON.stringify(described(change.issue), null, 2)));
        await ctx.out(`issue #${id} ${done}: ${printable(title(change.issue))}`);
      });
  issues
    .command('replay')
    .description("once the cause is fixed: re-queue the issue's affected events that are not done, and mark it resolved")
    .argument('<id>')
    .option('--account <id>', "only this account's events (the issue is still marked resolved)")
    .option('--dry-run', 'print how many events it would re-queue; change nothing', false)
    .option('-y, --yes', 'replay more than one event without asking (needed when not on a terminal)', false)
    .option('--json', 'print {"count", "replayed", "eventIds", "state"}')
    .action(async (id: string, opts: { account?: string; dryRun: boolean; yes: boolean; json?: boolean }) => {
      const { account } = opts;
      await withIssueDesk(ctx.env('issues'), async (desk) => {
        const preview = await desk.show(id, { unfinished: true, account, limit: 10 });
        if (!preview) throw new UsageError(`No issue #${id}.`);
        const count = (await desk.replay(id, { dryRun: true, account }))!.count;
        const what = `issue #${id} (${title(preview.issue)})`;
        if (opts.dryRun) {
          if (opts.json) return ctx.out(JSON.stringify({ count, replayed: 0, eventIds: [], state: preview.issue.state }));
          const sample = count
            ? `: ${sampleOf(
                preview.events.map((e) => e.eventId),
                count,
              )}`
            : '';
          await ctx.out(`${countOf(count, 'event')} to re-queue for ${printable(what)}${sample}`);
          return ctx.out('dry run: nothing changed');
        }
        await confirmBulk({ count, action: `re-queue ${countOf(count, 'event')} of ${what} and mark it resolved`, yes: opts.yes });
        const replay = await desk.replay(id, { account });
        if (!replay) throw new UsageError(`No issue #${id}.`);
        if (opts.json) {
          const { count: found, eventIds, state } = replay;
          return ctx.out(printableJson(JSON.stringify({ count: found, replayed: eventIds.length, eventIds, state })));
        }
        await ctx.out(`re-queued ${countOf(replay.eventIds.length, 'event')} of issue #${id}; it is ${replay.state}`);
        if (replay.eventIds.length < replay.count) {
          await ctx.err(`${replay.count - replay.eventIds.length} of its events were being processed and were left as they are`);
          throw new SilentFailure();
        }
      });
    });
}

const ACTION_HELP: Record<IssueAction, string> = {
  acknowledge: 'mark an open issue acknowledged: someone is on it (it stays so if it fails again)',
  resolve: 'mark an issue resolved: a failure after this reopens it (and notifies again)',
  ignore: 'mark an issue ignored: its failures are still counted, it is never reopened nor notified',
};

function title(issue: Issue): string {
  return `${sourceText(issue)}, ${issue.errorClass}, ${issue.eventType}`;
}

/** Issues in columns, one a line. */
function issuesTable(rows: readonly Issue[]): string {
  return table(
    ['#', 'STATE', 'SOURCE', 'ERROR CLASS', 'EVENT TYPE', 'EVENTS', 'NOT DONE', 'FAILURES', 'LAST SEEN'],
    rows.map((i) => [
      i.id,
      i.state,
      sourceText(i),
      i.errorClass,
      i.eventType,
      String(i.affectedEvents),
      String(i.unfinishedEvents),
      String(i.failures),
      i.lastSeenAt.toISOString(),
    ]),
    [5, 6, 7],
  );
}

/** One issue's facts, its last error and its affected events. */
function issueText(issue: Issue, events: readonly AffectedEvent[], limit: number): string {
  const facts = [
    ['issue', `#${issue.id} ${issue.state}`],
    ['source', sourceText(issue)],
    ['error class', issue.errorClass],
    ['event type', issue.eventType],
    ['first seen', issue.firstSeenAt.toISOString()],
    ['last seen', issue.lastSeenAt.toISOString()],
    ['failures', String(issue.failures)],
    ['events', `${issue.affectedEvents} (${issue.unfinishedEvents} not done) in ${countOf(issue.affectedAccounts, 'account')}`],
    ['reopened', String(issue.reopened)],
    ['last error', issue.lastError ?? '-'],
  ];
  const lines = facts.map(([name, value]) => `${`${name}:`.padEnd(13)}${printable(value!)}`);
  if (events.length > 0) {
    lines.push(
      '',
      table(
        ['EVENT ID', 'ACCOUNT', 'TYPE', 'STATUS', 'ATTEMPTS', 'RECEIVED'],
        events.map((e) => [e.eventId, e.account, e.eventType, e.status, String(e.attempts), e.receivedAt.toISOString()]),
        [4],
      ),
    );
    if (events.length === limit) lines.push(`showing the first ${limit} (raise --limit to see more)`);
  }
  return lines.join('\n');
}
