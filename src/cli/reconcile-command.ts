import type { Command } from 'commander';
import { createLogger } from '../logger.js';
import { budgetedClient } from '../service/budgeted-client.js';
import { parseSince } from '../sync/backfill.js';
import { loadSyncConfig } from '../sync/config.js';
import { RECONCILE_DEFAULTS, reconcile, type ReconcileReport } from '../sync/reconcile.js';
import { SilentFailure, UsageError } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { parseDuration } from '../internal/duration.js';
import { withDatabase } from './with-database.js';

/** The options of `payhooks reconcile`. */
export interface ReconcileCommandOptions {
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
 * Adds `payhooks reconcile [--since DATE|AGE] [--endpoint ID] [--dry-run] [--json]`: finds the events in the
 * service's delivery history that the inbox never stored and asks the service to send them again.
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
    .option('--json', 'print the report as one JSON object', false)
    .action(async (opts: ReconcileCommandOptions) => {
      const since = parseReconcileSince(opts.since ?? `${RECONCILE_DEFAULTS.lookbackMs / 86_400_000}d`);
      const env = ctx.env('reconcile');
      if (!env.PAYHOOKS_API_KEY) {
        throw new UsageError(
          "PAYHOOKS_API_KEY is not set: reconcile reads the service's delivery history and needs the organization's secret key (sk_…), " +
            "with PAYHOOKS_API_URL set to the service's base URL.",
        );
      }
      const config = await loadSyncConfig({ explicitPath: env.PAYHOOKS_CONFIG, mirrorSchema: env.PAYHOOKS_MIRROR_SCHEMA });
      const { api, bind } = budgetedClient({
        apiKey: env.PAYHOOKS_API_KEY,
        baseUrl: env.PAYHOOKS_API_URL,
        logger: createLogger({ level: env.PAYHOOKS_LOG_LEVEL }),
      });
      const report = await withDatabase(env, async (store) => {
        bind(store);
        return reconcile({ store, api, since, endpointId: opts.endpoint ?? config.reconcile.endpointId, dryRun: opts.dryRun });
      });
      await ctx.out(opts.json ? JSON.stringify(report) : describe(report, opts.dryRun === true).join('\n'));
      // An incomplete read is a failed run for a script, although what was found has been dealt with.
      for (const warning of report.warnings) await ctx.err(`warning: ${warning}`);
      if (report.unrecovered.length || report.warnings.length) throw new SilentFailure();
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
