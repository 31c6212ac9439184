import type { Logger } from 'pino';
import { parseDuration } from '../internal/duration.js';
import { type PeriodicTask, runPeriodically } from '../internal/periodic.js';
import type { PayhooksDatabase } from '../store/database.js';
import {
  dropHistoryPartitions,
  ensureHistoryPartitions,
  forgetLedgerRows,
  HISTORY_DEFAULTS,
  type PartitionDropReport,
  type PartitionSpan,
} from '../store/history-partitions.js';
import { SENDER_RETRY_HORIZON_MS } from '../store/maintenance.js';

/**
 * How the history is laid out and how long it is kept (docs/storage.md): `createPayhooks({ history })` and the
 * configuration file's `history` key.
 */
export interface HistoryOptions {
  /** Width of each partition: `day` (default), `week`, or a duration (`6h`; at least `1s`, for tests and benchmarks). */
  partition?: string | undefined;
  /** Partitions made ahead of the current one. Default 3. */
  ahead?: number | undefined;
  /** How long each part is kept: `{ history: '30d', ledger: 'forever' }`. Default: both forever. */
  retention?: RetentionOptions | undefined;
}

/** How long the history and the deduplication ledger are kept. */
export interface RetentionOptions {
  /**
   * Bodies, outcomes, attempts and effect steps (`30d`), or `forever` (default). Dropped a partition at a time;
   * unfinished, dead, invalid and needs-review events stay (their partition rebuilt with them alone) until resolved.
   */
  history?: string | undefined;
  /**
   * How long an eventId is remembered as received (`400d`), or `forever` (default). At least the sender's retry
   * horizon (4d7h), or a redelivery could run again; an event whose history is kept keeps its ledger row.
   */
  ledger?: string | undefined;
}

/** {@link HistoryOptions} checked and in numbers. */
export interface HistorySettings {
  span: PartitionSpan;
  ahead: number;
  /** Null: forever. */
  retentionMs: number | null;
  ledgerRetentionMs: number | null;
  /** How often the upkeep runs: a quarter of a partition, at most an hour. */
  everyMs: number;
}

/**
 * Checks {@link HistoryOptions} and fills in the defaults; throws a RangeError naming the option otherwise. Called by
 * `createPayhooks` (so a mistake fails at creation) and by serve's configuration check.
 *
 * @example
 * historySettings({ partition: 'week', retention: { history: '90d' } }).retentionMs // 7_776_000_000
 */
export function historySettings(options: HistoryOptions = {}): HistorySettings {
  const partition = options.partition ?? HISTORY_DEFAULTS.span;
  const span: PartitionSpan = partition === 'day' || partition === 'week' ? partition : { ms: durationOf('partition', partition) };
  if (typeof span === 'object' && (span.ms < 1000 || span.ms > 31 * 86_400_000))
    throw new RangeError(`partition must be day, week or a duration from 1s to 31d, not ${JSON.stringify(partition)}.`);
  const ahead = options.ahead ?? HISTORY_DEFAULTS.ahead;
  if (!Number.isSafeInteger(ahead) || ahead < 1 || ahead > 400)
    throw new RangeError(`ahead must be a whole number of partitions from 1 to 400, not ${String(ahead)}.`);
  const retentionMs = foreverOr('retention.history', options.retention?.history);
  const ledgerRetentionMs = foreverOr('retention.ledger', options.retention?.ledger);
  if (ledgerRetentionMs !== null && ledgerRetentionMs < SENDER_RETRY_HORIZON_MS)
    throw new RangeError(
      `retention.ledger must be at least the sender's retry horizon (4d7h), or a redelivered event would run again; not ${options.retention?.ledger}.`,
    );
  const spanMs = span === 'day' ? 86_400_000 : span === 'week' ? 7 * 86_400_000 : span.ms;
  return { span, ahead, retentionMs, ledgerRetentionMs, everyMs: Math.min(Math.max(Math.floor(spanMs / 4), 250), 3_600_000) };
}

function durationOf(option: string, text: string): number {
  try {
    return parseDuration(text);
  } catch {
    throw new RangeError(`${option} must be a duration such as 30d or 12h, not ${JSON.stringify(text)}.`);
  }
}

function foreverOr(option: string, text: string | undefined): number | null {
  if (text === undefined || text === 'forever') return null;
  const ms = durationOf(option, text);
  if (ms < 1000) throw new RangeError(`${option} must be forever or a duration of at least 1s, not ${JSON.stringify(text)}.`);
  return ms;
}

/** One run of the upkeep: partitions made, and what retention dropped, kept and forgot. */
export interface UpkeepReport extends PartitionDropReport {
  created: number;
  forgotten: number;
}

/** Ledger rows forgotten per statement, so a long-unpruned ledger is thinned in steps that do not hold locks long. */
const LEDGER_BATCH = 10_000;

/**
 * One pass of the history's upkeep: partitions made ahead, partitions past retention dropped (those holding
 * unfinished events kept), ledger rows past their retention forgotten.
 *
 * @example
 * await keepHistory(store, historySettings({ retention: { history: '30d' } }));
 */
export async function keepHistory(store: PayhooksDatabase, settings: HistorySettings): Promise<UpkeepReport> {
  const created = await ensureHistoryPartitions(store, { span: settings.span, ahead: settings.ahead });
  const now = Date.now();
  const drops: PartitionDropReport =
    settings.retentionMs === null
      ? { dropped: [], kept: [], busy: [] }
      : await dropHistoryPartitions(store, { before: new Date(now - settings.retentionMs) });
  let forgotten = 0;
  if (settings.ledgerRetentionMs !== null) {
    const before = new Date(now - settings.ledgerRetentionMs);
    for (let batch = LEDGER_BATCH; batch === LEDGER_BATCH; forgotten += batch) batch = await forgetLedgerRows(store, before, LEDGER_BATCH);
  }
  return { created: created.length, ...drops, forgotten };
}

/**
 * Runs {@link keepHistory} now and then every `settings.everyMs`, logging what it did; a failed pass is logged and
 * tried again at the next tick. `stop()` waits for a pass under way.
 *
 * @example
 * const upkeep = startHistoryUpkeep(store, historySettings(), logger);
 * await upkeep.stop();
 */
export function startHistoryUpkeep(
  store: PayhooksDatabase,
  settings: HistorySettings,
  logger: Logger,
  onPass?: (report: UpkeepReport) => void,
): PeriodicTask {
  return runPeriodically(
    settings.everyMs,
    'The history upkeep interval',
    async () => {
      try {
        const report = await keepHistory(store, settings);
        onPass?.(report);
        if (report.dropped.length || report.created || report.forgotten)
          logger.info(
            {
              created: report.created,
              dropped: report.dropped.map((p) => ({ partition: p.name, events: p.events })),
              forgotten: report.forgotten,
            },
            'history upkeep',
          );
        if (report.busy.length > 0)
          logger.warn(
            { partitions: report.busy.map((p) => p.name) },
            "history partitions left for the next pass: a long statement held the history's tables",
          );
        // Said once, when the partition is rebuilt; later passes find nothing more to drop in it.
        for (const kept of report.kept.filter((p) => p.compacted > 0))
          logger.warn(
            { partition: kept.name, dropped: kept.compacted, unresolved: kept.unresolved },
            'history partition past retention rebuilt with its unfinished events alone: they stay until resolved (replay them, or resolve their steps)',
          );
      } catch (err) {
        logger.error({ err }, 'history upkeep failed; trying again at the next pass');
      }
    },
    { now: true },
  );
}
