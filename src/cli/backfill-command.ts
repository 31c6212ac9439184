import { performance } from 'node:perf_hooks';
import type { Command } from 'commander';
import type { PayhooksDatabase } from '../store/database.js';
import {
  BACKFILL_DEFAULTS,
  BACKFILL_RESOURCES,
  type BackfillApi,
  type BackfillProgress,
  type BackfillReport,
  type BackfillResource,
  type BackfillResourceReport,
  parseResources,
  parseSince,
  runBackfill,
} from '../sync/backfill.js';
import { SilentFailure } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { countOf } from './format.js';
import { type Progress, startProgress } from './progress.js';
import { commandAccounts } from './command-accounts.js';
import { accountOption } from './parse-options.js';
import { migrateMirror } from '../store/migrate.js';
import { ensureMirrorAccounts } from '../sync/mirror/accounts.js';
import { withDatabase } from './with-database.js';

/** The options of `payhooks backfill`. */
export interface BackfillCommandOptions {
  account?: string | undefined;
  resource?: string | undefined;
  since?: string | undefined;
}

const HELP = `
Each page's rows and the cursor move in one transaction, so an interrupted run (Ctrl-C, a kill, a crash)
resumes where it stopped when run again with the same --since; once a pass has finished, the next run
starts a new pass from the start. Requests come out of the rate budget in the payhooks database that a
running serve uses too (the service allows 1,000 a minute), so both can run at once.

Only customers and invoices can be backfilled: they are the only resources the service's API lists.
Payments, refunds, disputes, subscriptions and payment methods reach the mirror through webhook events.

Paging is by offset over lists kept oldest first: records created during a run are read at the end; a
record deleted during a run would shift the later ones (the service shows no deletion of customers or
invoices, archived and canceled ones stay listed).`;

/** 1,000: counts in results are read by people. */
const n = (value: number): string => value.toLocaleString('en-US');

/**
 * Adds `payhooks backfill [--account ID] [--resource customers,invoices] [--since DATE]`: pages through the service's
 * list endpoints into the Postgres mirror (src/sync/backfill.ts), for one account or each configured one in turn
 * with its own API key, with progress on stderr and a summary per resource on stdout; stops cleanly on SIGINT or
 * SIGTERM and resumes on the next run.
 */
export function addBackfillCommand(program: Command, ctx: CommandContext): void {
  program
    .command('backfill')
    .description(
      "fill the Postgres mirror from the service's API (customers and invoices, 100 per request, within the rate budget shared with serve); resumes after an interruption",
    )
    .option(
      '--resource <names>',
      `comma-separated, from ${BACKFILL_RESOURCES.join(', ')} (the only resources the API lists); default: all of them`,
    )
    .option(
      '--since <date>',
      'write only records created or changed at or after this date (2025-01-31, midnight UTC, or an ISO time with a zone); ' +
        'every page is still read, as the API has no date filter; each --since keeps its own cursor',
    )
    .option('--account <id>', 'only this account; default: every configured account in turn, each under its id', accountOption)
    .addHelpText('after', HELP)
    .action(async (opts: BackfillCommandOptions) => {
      // Every check before the database opens: a mistake stops the command with nothing opened or written.
      const resources = opts.resource === undefined ? [...BACKFILL_RESOURCES] : parseResources(opts.resource);
      const since = opts.since === undefined ? undefined : parseSince(opts.since);
      const { env, mirrorSchema, accounts, configured, named, bind } = await commandAccounts(ctx, 'backfill', opts.account);
      await withDatabase(env, async (store) => {
        bind(store);
        // Backfill may be what makes the mirror: its accounts table then starts in step with the configuration.
        await migrateMirror(store, mirrorSchema);
        await ensureMirrorAccounts(store.db, mirrorSchema, configured);
        for (const account of accounts) {
          if (named) await ctx.out(`account ${account.id}:`);
          await backfill(ctx, store, account.api, { mirrorSchema, resources, since, account: account.id, named });
        }
      });
    });
}

async function backfill(
  ctx: CommandContext,
  store: PayhooksDatabase,
  api: BackfillApi,
  run: { mirrorSchema: string; resources: BackfillResource[]; since: Date | undefined; account: string; named: boolean },
): Promise<void> {
  const started = performance.now();
  const controller = new AbortController();
  let stoppedBy: string | undefined;
  let progress: Progress | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stoppedBy) return;
    stoppedBy = signal;
    progress?.stop();
    progress = undefined;
    // A second Ctrl-C finds no handler and ends the process at once, which is safe: pages commit atomically.
    void ctx.err(`${signal}: stopping after the page being written (again to stop at once)…`);
    controller.abort(new Error(`stopped by ${signal}`));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  // Where each resource's cursor stands, for the message of a run that stops part-way.
  const positions = new Map<BackfillResource, { position: number; total: number | null }>();
  const onProgress = (event: BackfillProgress) => {
    switch (event.kind) {
      case 'start':
        positions.set(event.resource, { position: event.from, total: null });
        void ctx.err(startNote(event, run.since));
        return;
      case 'page':
        positions.set(event.resource, { position: event.position, total: event.total });
        if (!progress && !stoppedBy) {
          // Started at the first page, the first moment the list's length is known.
          progress = startProgress('read', event.total ?? event.position, BACKFILL_DEFAULTS.pageSize, process.stderr, {
            unit: event.resource,
            startAt: event.position - event.read,
          });
        }
        progress?.advance(event.read);
        return;
      case 'end':
        progress?.stop();
        progress = undefined;
        // A progress callback cannot wait; the line is written at once, and the process flushes before it exits.
        void ctx.out(resourceSummary(event.report));
        return;
    }
  };

  let report: BackfillReport;
  try {
    report = await runBackfill({
      store,
      api,
      account: run.account,
      mirrorSchema: run.mirrorSchema,
      resources: run.resources,
      since: run.since,
      signal: controller.signal,
      onProgress,
    });
  } catch (err) {
    progress?.stop();
    await ctx.err(
      `stopped by an error ${whereStopped(run.resources, positions)}; running payhooks backfill${again(run)} again resumes there`,
    );
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }

  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const requests = report.resources.reduce((sum, r) => sum + r.requests, 0);
  if (report.stopped) {
    await ctx.err(
      `stopped by ${stoppedBy ?? 'a signal'} ${whereStopped(run.resources, positions)} after ${countOf(requests, 'request')} in ${seconds} s; ` +
        `run payhooks backfill${again(run)} again${run.since ? ' with the same --since' : ''} to resume there`,
    );
    throw new SilentFailure();
  }
  const covered = report.resources.map((r) => `${n(r.position)} ${r.resource}`).join(' and ');
  await ctx.out(
    `backfill of ${covered} into ${run.mirrorSchema}${run.named ? ` for account ${run.account}` : ''} finished: ${countOf(requests, 'request')} in ${seconds} s`,
  );
}

/** The `--account` a command line that resumes this run needs: the account's, when the configuration names accounts. */
const again = (run: { account: string; named: boolean }): string => (run.named ? ` --account ${run.account}` : '');

function startNote(event: Extract<BackfillProgress, { kind: 'start' }>, since: Date | undefined): string {
  const scope = since ? ` changed since ${since.toISOString()}` : '';
  switch (event.start) {
    case 'fresh':
      return `${event.resource}${scope}: reading from the start`;
    case 'resumed':
      return `${event.resource}${scope}: resuming at record ${n(event.from)} (${n(event.writtenBefore)} written before the interruption)`;
    case 'new-pass':
      return `${event.resource}${scope}: the last pass finished at ${event.lastFinishedAt?.toISOString() ?? 'an unknown time'}; starting a new pass from the start`;
  }
}

function resourceSummary(r: BackfillResourceReport): string {
  const parts = [`${n(r.read)} read`, `${n(r.written)} written`];
  if (r.olderThanSince) parts.push(`${n(r.olderThanSince)} unchanged since ${r.sinceKey} left alone`);
  if (r.keptNewer) parts.push(`${n(r.keptNewer)} kept (the mirror already held a newer state)`);
  const where = r.finished
    ? `finished at record ${n(r.position)}`
    : `stopped at record ${n(r.position)}${r.total === null ? '' : ` of ${n(r.total)}`}`;
  const resumed = r.start === 'resumed' ? `, resumed at record ${n(r.from)}; ${n(r.writtenInPass)} written in this pass` : '';
  if (r.finished && r.position === 0) return `${r.resource}: the service lists none (${countOf(r.requests, 'request')})`;
  return `${r.resource}: ${where}: ${parts.join(', ')} in ${countOf(r.requests, 'request')}${resumed}`;
}

function whereStopped(
  resources: readonly BackfillResource[],
  positions: ReadonlyMap<BackfillResource, { position: number; total: number | null }>,
): string {
  const parts = resources.map((resource) => {
    const at = positions.get(resource);
    if (!at) return `${resource} not started`;
    return `${resource} at record ${n(at.position)}${at.total === null ? '' : ` of ${n(at.total)}`}`;
  });
  return `(${parts.join(', ')})`;
}
