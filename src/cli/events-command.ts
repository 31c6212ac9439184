import { type Command, Option } from 'commander';
import type { OldestPending, StatusCounts, StoredEvent } from '../store/inbox.js';
import { EVENT_STATUSES, type EventStatus } from '../store/schema.js';
import { UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { formatAge, printable, printableJson, table } from './format.js';
import { addHistoryCommand } from './history-command.js';
import { accountOption, positiveInt } from './parse-options.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import { quarantinedJson, quarantineTable } from './quarantine-command.js';
import { withInbox } from './with-inbox.js';

/** The options of `payhooks events list`. */
export interface ListCommandOptions {
  /** A state, or `quarantined`: the signed deliveries that could not be stored as events. */
  status?: EventStatus | 'quarantined' | undefined;
  type?: string | undefined;
  account?: string | undefined;
  limit: number;
  json?: boolean | undefined;
}

/** What `payhooks events stats --json` prints. */
export interface EventStats {
  total: number;
  /** Every state, 0 where there is none. */
  byStatus: Record<EventStatus, number>;
  /** Per event type: every state and the type's total. */
  byType: Record<string, Record<EventStatus | 'total', number>>;
  oldestPending: OldestPending | null;
}

/** Adds `payhooks events list|show|stats`; returns the `events` command. */
export function addEventsCommands(program: Command, ctx: CommandContext): Command {
  const events = program.command('events').description('inspect stored events');
  events
    .command('list')
    .description('list stored events, newest first, and how many match in all')
    .addOption(
      new Option('--status <status>', 'only events in this state (quarantined: deliveries that could not be stored as events)').choices([
        ...EVENT_STATUSES,
        'quarantined',
      ]),
    )
    .option('--type <type>', 'only events of this type, e.g. INVOICE_PAID')
    .option('--account <id>', "only this account's events (docs/accounts.md); default every account's", accountOption)
    .option('--limit <n>', 'at most this many', positiveInt('--limit'), 100)
    .option('--json', 'print one JSON array (the "showing N of M" note goes to stderr, when not all are shown)')
    .action(async (opts: ListCommandOptions) => {
      if (opts.status === 'quarantined') {
        const held = await withInbox(ctx.env('events'), (inbox) =>
          inbox.listQuarantined({ state: 'held', limit: opts.limit, account: opts.account }),
        );
        const shown = opts.type === undefined ? held : held.filter((q) => q.eventType === opts.type);
        if (opts.json) return ctx.out(printableJson(JSON.stringify(shown, null, 2)));
        if (shown.length === 0) return ctx.out('no events');
        await ctx.out(quarantineTable(shown));
        return ctx.out(`showing ${shown.length} quarantined deliveries (payhooks quarantine show|release|discard ID)`);
      }
      const filter = { account: opts.account, status: opts.status, eventType: opts.type };
      const [rows, counts] = await withInbox(ctx.env('events'), async (inbox) => [
        await inbox.listEvents({ ...filter, limit: opts.limit }),
        await inbox.countEventsByStatus(filter),
      ]);
      const total = sum(counts);
      const showing = `showing ${rows.length} of ${total} events`;
      if (opts.json) {
        await ctx.out(printableJson(JSON.stringify(rows, null, 2)));
        if (rows.length < total) await ctx.err(`${showing} (raise --limit to see more)`);
        return;
      }
      if (rows.length === 0) return ctx.out('no events');
      await ctx.out(eventsTable(rows));
      await ctx.out(opts.status ? showing : `${showing} (${statusSummary(counts)})`);
    });
  events
    .command('show')
    .description("show one stored event with its body and headers, by its eventId, the sender's id of the delivery or a quarantine number")
    .argument('<id>', "an eventId, the id the sender's headers gave the delivery (X-Webhook-Event-Id, webhook-id), or a quarantine number")
    .option(
      '--account <id>',
      'the account whose event it is; default: any account, but an eventId stored in several is refused, naming them',
      accountOption,
    )
    // show prints JSON either way; the flag is accepted so that scripts can pass --json to every events command.
    .option('--json', 'print the event as JSON (what show prints anyway)')
    .action((id: string, opts: { account?: string }) => showAnyId(ctx, id, opts.account));
  addHistoryCommand(events, ctx);
  events
    .command('stats')
    .description('count stored events per state and per type, and tell the age of the oldest pending one')
    .option('--json', 'print one JSON object')
    .action(async (opts: { json?: boolean }) => {
      const stats = await withInbox(ctx.env('events'), async (inbox) =>
        tally(await inbox.countEventsByTypeAndStatus(), (await inbox.oldestPendingEvent()) ?? null),
      );
      if (opts.json) return ctx.out(printableJson(JSON.stringify(stats, null, 2)));
      await ctx.out(statsText(stats));
    });
  return events;
}

/**
 * `events show ID`: the event of that eventId, else the event whose sender gave the delivery that id, else the
 * quarantined delivery; what was found by another id than the eventId is said on stderr, so stdout stays the JSON.
 * Show prints one event (one JSON object, which scripts read as such): an eventId that several accounts hold is
 * refused without `--account`, naming them, rather than one of them picked (docs/accounts.md#operators); so is a sender's
 * id that events of several accounts carry.
 */
async function showAnyId(ctx: CommandContext, id: string, account: string | undefined): Promise<void> {
  const shown = await withInbox(ctx.env('events'), async (inbox) => {
    const found = await inbox.findById(id, account);
    if (found?.kind === 'event') {
      if (found.accounts.length > 1) return { accounts: found.accounts, subject: `Event ${printable(id)} is stored in` };
      return { event: await inbox.getEvent(found.eventId, found.account) };
    }
    if (found?.kind === 'sender-id') {
      if (found.accounts.length > 1) return { accounts: found.accounts, subject: `The sender's id ${printable(id)} names events of` };
      return { event: await inbox.getEvent(found.eventId, found.account), note: `found by its sender's ${found.header}` };
    }
    if (found?.kind === 'quarantine')
      return { held: await inbox.getQuarantined(found.quarantineId), note: `quarantined delivery #${found.quarantineId} (${found.state})` };
    return {};
  });
  if (shown.accounts)
    throw new UsageError(
      `${shown.subject} ${shown.accounts.length} accounts (${shown.accounts.map(printable).join(', ')}): name one with --account, e.g. payhooks events show ${printable(id)} --account ${printable(shown.accounts[0]!)}.`,
    );
  if (shown.note) await ctx.err(`${printable(id)}: ${shown.note}`);
  if (shown.event) return ctx.out(printableJson(JSON.stringify(shown.event, null, 2)));
  if (shown.held) return ctx.out(quarantinedJson(shown.held));
  throw new UsageError(
    `No stored event with eventId ${id}${account ? ` in account ${account}` : ''}, and nothing else is stored under it: no sender's id (X-Webhook-Event-Id, webhook-id, svix-id) and no quarantine number.`,
  );
}

function sum(counts: StatusCounts): number {
  return Object.values(counts).reduce((a, b) => a + (b ?? 0), 0);
}

function statusSummary(counts: StatusCounts): string {
  return EVENT_STATUSES.filter((status) => counts[status])
    .map((status) => `${status} ${counts[status]}`)
    .join(', ');
}

function eventsTable(rows: readonly StoredEvent[]): string {
  // The account's column only where there is more than the default account: a single-account inbox reads as before.
  const accounts = rows.some((e) => e.account !== DEFAULT_ACCOUNT);
  return table(
    [...(accounts ? ['ACCOUNT'] : []), 'EVENT ID', 'TYPE', 'STATUS', 'ATTEMPTS', 'DELIVERIES', 'RECEIVED', 'LAST ERROR'],
    rows.map((e) => [
      ...(accounts ? [e.account] : []),
      e.eventId,
      e.eventType,
      e.status,
      String(e.attempts),
      String(e.deliveries),
      e.receivedAt.toISOString(),
      e.lastError ?? '',
    ]),
  );
}

function zeroes(): Record<EventStatus, number> {
  return Object.fromEntries(EVENT_STATUSES.map((status) => [status, 0])) as Record<EventStatus, number>;
}

/** Folds the per-type, per-state counts into {@link EventStats}. */
function tally(
  counts: readonly { eventType: string; status: EventStatus; count: number }[],
  oldestPending: OldestPending | null,
): EventStats {
  const byStatus = zeroes();
  // A Map, not an object: event types come from senders, and one could be named __proto__.
  const byType = new Map<string, Record<EventStatus | 'total', number>>();
  let total = 0;
  for (const { eventType, status, count } of counts) {
    const type = byType.get(eventType) ?? { ...zeroes(), total: 0 };
    byType.set(eventType, type);
    type[status] += count;
    type.total += count;
    byStatus[status] += count;
    total += count;
  }
  return { total, byStatus, byType: Object.fromEntries(byType), oldestPending };
}

/**
 * The stats' last line: the oldest pending event, its age, and the queued events of its resource when there are
 * others (they run one at a time, so they, not the worker, may be what holds the backlog).
 *
 * @example
 * oldestPendingLine(oldest); // 'oldest pending event: evt_1, received 2026-05-01T09:12:44.120Z (3h 12m ago)'
 */
export function oldestPendingLine(oldest: OldestPending): string {
  const line = `oldest pending event: ${oldest.eventId}, received ${oldest.receivedAt.toISOString()} (${formatAge(oldest.ageMs)} ago)`;
  if (!oldest.resourceKey || oldest.queuedForResource < 2) return line;
  return `${line}, one of ${oldest.queuedForResource} queued events of ${oldest.resourceKey} (they run one at a time)`;
}

function statsText(stats: EventStats): string {
  if (stats.total === 0) return 'no events';
  const columns = [...EVENT_STATUSES, 'total'] as const;
  const rows = Object.entries(stats.byType).map(([type, counts]) => [type, ...columns.map((c) => String(counts[c]))]);
  rows.push(['TOTAL', ...EVENT_STATUSES.map((status) => String(stats.byStatus[status])), String(stats.total)]);
  const numeric = columns.map((_, i) => i + 1);
  const oldest = stats.oldestPending;
  return [
    table(['TYPE', ...columns.map((c) => c.toUpperCase())], rows, numeric),
    '',
    oldest ? oldestPendingLine(oldest) : 'no pending events',
  ].join('\n');
}
