import { performance } from 'node:perf_hooks';
import type { Command } from 'commander';
import { maskPersonalData } from '../console/mask.js';
import { parseSince } from '../sync/backfill.js';
import type { FieldDiff } from '../sync/verify/compare-row.js';
import {
  type Drift,
  parseSample,
  parseVerifyResources,
  VERIFY_DEFAULTS,
  VERIFY_RESOURCES,
  type VerifyProgress,
  type VerifyReport,
  type VerifyResourceReport,
  verifyMirror,
} from '../sync/verify/verify-mirror.js';
import { SilentFailure } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import { countOf } from './format.js';
import { type Progress, startProgress } from './progress.js';
import { commandAccounts } from './command-accounts.js';
import { accountOption } from './parse-options.js';
import { withDatabase } from './with-database.js';

/** The exit code of a run that found drift (0: the mirror matches; 1: an error). */
export const DRIFT_EXIT_CODE = 3;

/** The options of `payhooks verify`. */
export interface VerifyCommandOptions {
  account?: string | undefined;
  resource?: string | undefined;
  since?: string | undefined;
  sample?: string | undefined;
  repair?: boolean | undefined;
  json?: boolean | undefined;
}

const HELP = `
Exit status: 0 when the mirror matches the service, ${DRIFT_EXIT_CODE} when drift was found (also with --repair, which
says what it repaired), 1 on an error. After --repair the next verify exits 0 only if every drifted row was repaired
and there were no extra rows: --repair leaves extras alone, so they keep it at ${DRIFT_EXIT_CODE} until they are
checked and deleted by hand. A nightly job can fail on ${DRIFT_EXIT_CODE} (docs/mirror.md).

Drift: missing (the service has the record, the mirror no row), stale (the row was written before the record
last changed: a change never reached it), different (written after that change, and still differs), extra (a
row for a record the service does not know; --repair leaves these alone). Each comes with a field-level diff;
emails and phone numbers are masked.

Customers and invoices are read through the list endpoints, 100 per request; payments (the API reads them
only by id) are those the mirror holds or the stored events named (read from their bodies). Refunds, disputes,
subscriptions and payment methods, which the API cannot read, are checked through the finished events that named
them: each must have its row (--repair writes a missing one from the newest state the events carry). A stored
body that is not a valid event stops verify with exit 1: what it named is unknown. Requests come out of the rate budget
that a running serve shares. Each step's findings and the cursor commit together: an interrupted run
(Ctrl-C, a kill, a crash) resumes where it stopped when run again with the same --since; once a pass has
finished, the next run starts a new one. --sample runs are not resumable.`;

/** 1,000: counts in results are read by people. */
const n = (value: number): string => value.toLocaleString('en-US');

/**
 * Adds `payhooks verify [--account ID] [--resource …] [--since DATE] [--sample N] [--repair] [--json]`: compares the
 * service's records with the Postgres mirror (src/sync/verify/), for one account or each configured one in turn with
 * its own API key, prints a summary and the diffs, exits 0, 3 (drift in any account) or 1.
 */
export function addVerifyCommand(program: Command, ctx: CommandContext): void {
  program
    .command('verify')
    .description(
      'prove the Postgres mirror against the service: missing, stale, different and extra rows with a field-level diff; exit 0 when it matches, 3 on drift',
    )
    .option('--resource <names>', `comma-separated, from ${VERIFY_RESOURCES.join(', ')}; default: all of them`)
    .option(
      '--since <date>',
      'compare only records created or changed at or after this date (2025-01-31, midnight UTC, or an ISO time with a zone); each --since keeps its own cursor',
    )
    .option('--sample <n>', 'check n records per resource (the newest listed and n random rows) instead of all')
    .option('--repair', "rewrite each drifted row from the API through the mirror's guarded write, then read it back", false)
    .option('--json', 'print the report as one JSON document (with accounts configured: an array, one per account)', false)
    .option('--account <id>', 'only this account; default: every configured account in turn, each under its id', accountOption)
    .addHelpText('after', HELP)
    .action(async (opts: VerifyCommandOptions) => {
      // Every check before the database opens: a mistake stops the command with nothing opened or written.
      const resources = opts.resource === undefined ? [...VERIFY_RESOURCES] : parseVerifyResources(opts.resource);
      const since = opts.since === undefined ? undefined : parseSince(opts.since);
      const sample = opts.sample === undefined ? undefined : parseSample(opts.sample);
      const { env, mirrorSchema, accounts, named, bind } = await commandAccounts(ctx, 'verify', opts.account);
      const reports: ReturnType<typeof jsonReport>[] = [];
      let drifted = false;
      await withDatabase(env, async (store) => {
        bind(store);
        for (const { id: account, api } of accounts) {
          const started = performance.now();
          const { report, stoppedBy } = await runWithProgress(ctx, (signal, onProgress) =>
            verifyMirror({ store, api, account, mirrorSchema, resources, since, sample, repair: opts.repair, signal, onProgress }),
          );
          const seconds = (performance.now() - started) / 1000;
          if (report.stopped) {
            await ctx.err(
              `stopped by ${stoppedBy ?? 'a signal'} after ${countOf(report.requests, 'request')}; ` +
                `run payhooks verify${named ? ` --account ${account}` : ''} again${since ? ' with the same --since' : ''} to resume there`,
            );
            throw new SilentFailure();
          }
          drifted ||= report.drift.length > 0;
          if (opts.json) reports.push(jsonReport(report, seconds, opts.repair === true));
          else await ctx.out([...(named ? [`account ${account}:`] : []), ...describe(report, seconds, opts.repair === true)].join('\n'));
        }
      });
      // One document: the report itself for the one implicit account (as before accounts), an array with accounts.
      if (opts.json) await ctx.out(JSON.stringify(named ? reports : reports[0]));
      if (drifted) throw new SilentFailure(DRIFT_EXIT_CODE);
    });
}

/** Runs verify with progress on stderr, stopping cleanly on SIGINT or SIGTERM. */
async function runWithProgress(
  ctx: CommandContext,
  work: (signal: AbortSignal, onProgress: (event: VerifyProgress) => void) => Promise<VerifyReport>,
): Promise<{ report: VerifyReport; stoppedBy: string | undefined }> {
  const controller = new AbortController();
  let stoppedBy: string | undefined;
  let progress: Progress | undefined;
  let begun = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stoppedBy) return;
    stoppedBy = signal;
    progress?.stop();
    progress = undefined;
    void ctx.err(`${signal}: stopping after the step being recorded (again to stop at once)…`);
    controller.abort(new Error(`stopped by ${signal}`));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const onProgress = (event: VerifyProgress) => {
    switch (event.kind) {
      case 'start':
        begun = true;
        if (event.start === 'resumed') void ctx.err(`${event.resource}: resuming at record ${n(event.from)}`);
        return;
      case 'step':
        if (!progress && !stoppedBy) {
          progress = startProgress('verified', event.total ?? event.position, VERIFY_DEFAULTS.pageSize, process.stderr, {
            unit: event.resource,
            startAt: event.position - event.checked,
          });
        }
        progress?.advance(event.checked);
        return;
      case 'end':
        progress?.stop();
        progress = undefined;
        return;
      case 'repair':
        if (event.done === 1) progress = startProgress('repaired', event.total, 10, process.stderr, { unit: 'rows' });
        progress?.advance(1);
        if (event.done === event.total) {
          progress?.stop();
          progress = undefined;
        }
        return;
    }
  };
  try {
    return { report: await work(controller.signal, onProgress), stoppedBy };
  } catch (err) {
    progress?.stop();
    // Before the first resource began (no mirror, the database refused), there is nothing to resume.
    if (begun) await ctx.err('verify stopped by an error; running payhooks verify again resumes where it stopped');
    throw err;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** A value as the diff prints it: JSON, personal data masked. */
function shown(value: unknown): string {
  return maskPersonalData(JSON.stringify(value) ?? 'null');
}

function diffLine(diff: FieldDiff): string {
  return `      ${diff.field}: mirror ${shown(diff.mirror)}, service ${shown(diff.api)}`;
}

function driftLines(drift: Drift, repair: boolean): string[] {
  const state = repair ? (drift.repaired ? ' (repaired)' : drift.kind === 'extra' ? ' (left alone)' : ' (NOT repaired)') : '';
  const head = `  ${drift.kind} ${drift.resource} ${drift.id}${state}`;
  if (drift.kind === 'extra') return [`${head}: the service does not know it`];
  if (drift.namedBy) {
    const { eventId, eventType } = drift.namedBy;
    return [
      `${head}: no row in the mirror, although ${eventType} ${eventId} named it${repair ? '' : ' (--repair writes it from the events)'}`,
    ];
  }
  if (drift.kind === 'missing') return [`${head}: no row in the mirror`];
  return [head, ...drift.diff.map(diffLine)];
}

function resourceLine(r: VerifyResourceReport, drift: readonly Drift[]): string {
  const found = drift.filter((d) => d.resource === r.resource).length;
  if (r.start === 'events') {
    return `${r.resource} (through the events that named them): ${n(r.checked)} named by ${countOf(r.events ?? 0, 'finished event')}, ${found === 0 ? 'every one has its row' : `${n(found)} without a row`}`;
  }
  const how = r.start === 'resumed' ? ' (resumed)' : r.start === 'sample' ? ' (sample)' : '';
  return `${r.resource}${how}: ${n(r.checked)} checked, ${found === 0 ? 'all match' : `${n(found)} drifted`} (${countOf(r.requests, 'request')})`;
}

/** The report as people read it: one line per resource, the drift with its diffs, a summary. */
export function describe(report: VerifyReport, seconds: number, repair: boolean): string[] {
  const lines = report.resources.map((r) => resourceLine(r, report.drift));
  for (const drift of report.drift) lines.push(...driftLines(drift, repair));
  const { missing, stale, different, extra } = report.counts;
  const scope = `${report.mirrorSchema}${report.since ? ` since ${report.since.toISOString()}` : ''}${report.sample ? ` (sample of ${report.sample})` : ''}`;
  const timing = `${countOf(report.requests, 'request')} in ${seconds.toFixed(1)} s`;
  if (report.drift.length === 0) {
    lines.push(`the mirror ${scope} matches the service: ${timing}`);
    return lines;
  }
  lines.push(
    `drift in ${scope}: ${countOf(report.drift.length, 'record')} (${missing} missing, ${stale} stale, ${different} different, ${extra} extra): ${timing}`,
  );
  if (repair) {
    const repaired = report.drift.filter((d) => d.repaired).length;
    lines.push(
      `repaired ${repaired} of ${report.drift.length}${extra ? `; ${extra} extra left alone (rows the service does not know: check and delete them by hand)` : ''}`,
    );
  } else lines.push('run payhooks verify --repair to rewrite the drifted rows from the service');
  return lines;
}

/** The report as one JSON document (diff values masked as in the text). */
function jsonReport(report: VerifyReport, seconds: number, repair: boolean) {
  return {
    matches: report.drift.length === 0,
    account: report.account,
    mirrorSchema: report.mirrorSchema,
    since: report.since?.toISOString() ?? null,
    sample: report.sample,
    counts: report.counts,
    requests: report.requests,
    seconds: Number(seconds.toFixed(3)),
    repaired: repair ? report.drift.filter((d) => d.repaired).length : null,
    resources: report.resources,
    drift: report.drift.map((drift) => ({
      ...drift,
      diff: drift.diff.map((d) => ({ field: d.field, mirror: JSON.parse(shown(d.mirror)), api: JSON.parse(shown(d.api)) })),
    })),
  };
}
