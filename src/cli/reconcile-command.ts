import type { Command } from 'commander';
import { parseSince } from '../sync/backfill.js';
import { RECONCILE_DEFAULTS, reconcile, type ReconcileReport } from '../sync/reconcile.js';
import { SilentFailure } from './cli-errors.js';
import { commandAccounts } from './command-accounts.js';
import { accountOption } from './parse-options.js';
import type { CommandContext } from './command-context.js';
import { parseDuration } from '../internal/duration.js';
import { withDatabase } from './with-database.js';

/** The options of `payhooks reconcile`. */
export interface ReconcileCommandOptions {
  account?: string | undefined;
  since?: string | undefined;
  endpoint?: string | undefined;
  dryRun?: boolean | undefined;
  json?: boolean | undefined;
}

/** `--since`: a date (`2026-11-20`, an ISO time with a zone) or a duration back from now (`7d`, `36h`). */
export function parseReconcileSince(text: string, now = Date.now()): Date {
  if (/^\s*\d+\s*[dhms]/.test(text) && !/^\d{4}-/.test(text.trim())) return new Date(now - parseDuration(text));
  return parseSince(text);
}

/**
 * Adds `payhooks reconcile [--account ID] [--since DATE|AGE] [--endpoint ID] [--dry-run] [--json]`: finds the events
 * in the service's delivery history that the inbox never stored and asks the service to send them again, for one
 * account or each configured one in turn, each through its own API key.
 */
export function addReconcileCommand(program: Command, ctx: CommandContext): void {
  program
    .command('reconcile')
    .description('find events the service sent (or gave up sending) that the inbox never stored, and have them sent again')
    .option(
      '--since <date|age>',
      "delivery records created since a date (2026-11-20) or an age (7d, 36h); default 5d, past the sender's 4d 6½h of retries",
    )
    .option(
      '--endpoint <id>',
      'the webhook endpoint this payhooks receives for (needed when the history holds several); default: reconcile.endpointId of the configuration file',
    )
    .option('--dry-run', 'list the missing events, ask for nothing', false)
    .option('--json', 'print the report as one JSON object (with accounts configured: an array, one per account)', false)
    .option('--account <id>', "only this account's history; default: every configured account in turn, each under its id", accountOption)
    .action(async (opts: ReconcileCommandOptions) => {
      const since = parseReconcileSince(opts.since ?? `${RECONCILE_DEFAULTS.lookbackMs / 86_400_000}d`);
      const { env, sync, accounts, named, bind } = await commandAccounts(ctx, 'reconcile', opts.account);
      const reports = await withDatabase(env, async (store) => {
        bind(store);
        const done: ReconcileReport[] = [];
        // Each account's history through its own key: one account's client never reads another's deliveries.
        for (const { id: account, api } of accounts) {
          done.push(
            await reconcile({ store, api, account, since, endpointId: opts.endpoint ?? sync.reconcile.endpointId, dryRun: opts.dryRun }),
          );
        }
        return done;
      });
      if (opts.json) await ctx.out(JSON.stringify(named ? reports : reports[0]));
      else {
        const text = reports.flatMap((report) => [
          ...(named ? [`account ${report.account}:`] : []),
          ...describe(report, opts.dryRun === true),
        ]);
        await ctx.out(text.join('\n'));
      }
      // An incomplete read is a failed run for a script, although what was found has been dealt with.
      for (const report of reports) {
        for (const warning of report.warnings) await ctx.err(`warning: ${named ? `account ${report.account}: ` : ''}${warning}`);
      }
      if (reports.some((report) => report.unrecovered.length || report.warnings.length)) throw new SilentFailure();
    });
}

function describe(report: ReconcileReport, dryRun: boolean): string[] {
  const lines = [
    `delivery records since ${report.since.toISOString()}${report.endpointId ? ` for endpoint ${report.endpointId}` : ''}: ${report.listed}`,
    `events the inbox never stored: ${report.missing.length}`,
    ...report.missing.map((event) => `  ${event.eventType} ${event.eventId} (${event.status})`),
  ];
  if (report.inFlight.length) {
    lines.push(`not stored yet but being delivered now (not asked for again): ${report.inFlight.length}`);
    for (const event of report.inFlight) lines.push(`  ${event.eventType} ${event.eventId}`);
  }
  if (dryRun) return [...lines, 'dry run: nothing was asked for'];
  lines.push(`asked the service to send again: ${report.resent.length}`);
  if (report.unrecovered.length) {
    lines.push(`refused: ${report.unrecovered.length} (run payhooks backfill to bring customers and invoices up to date)`);
    for (const event of report.unrecovered) lines.push(`  ${event.eventType} ${event.eventId}: ${event.reason}`);
  }
  return lines;
}
