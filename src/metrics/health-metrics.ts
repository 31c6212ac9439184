import { Gauge, type Registry } from 'prom-client';
import { ALARM_NAMES } from '../alarms/alarm-checks.js';
import type { HealthReport } from '../alarms/health-report.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import type { SweeperRun } from '../store/sweeper-runs.js';
import { boundedLabels, DEFAULT_ACCOUNT_LABELS } from './payhooks-metrics.js';

/** The sweeper's counts `payhooks_sweeper_last_run_findings` shows, by its `finding` label. */
export const SWEEPER_FINDINGS = ['missing', 'resent', 'unrecovered', 'drift', 'repaired'] as const;

/**
 * Registers the alarms' and the gap sweeper's series (docs/metrics.md#alarms-and-the-gap-sweeper), read from
 * `health` at each scrape: the same report GET /admin/api/health answers. A health that cannot be read leaves the
 * last values. `sweeperEveryMs` is how often this service's sweeper runs (null: it does not run here), exported as
 * `payhooks_sweeper_interval_seconds` so that the staleness rule knows what to expect. `accountLabel` names each
 * account's findings (pass `createPayhooksMetrics(…).accountLabel`, so that the cap and the names are the other
 * series'); by default the first {@link DEFAULT_ACCOUNT_LABELS} accounts seen, `other` after.
 *
 * @example
 * registerHealthMetrics(registry, () => monitor.health(), { sweeperEveryMs: 3_600_000, accountLabel: metrics.accountLabel });
 */
export function registerHealthMetrics(
  registry: Registry,
  health: () => Promise<HealthReport>,
  options: { sweeperEveryMs: number | null; accountLabel?: ((account: string) => string) | undefined } = { sweeperEveryMs: null },
): void {
  const accountLabel = options.accountLabel ?? boundedLabels(DEFAULT_ACCOUNT_LABELS);
  const registers = [registry];
  // The monitor answers its latest evaluation: reading it once per gauge costs nothing.
  const report = () => health().catch(() => undefined);
  new Gauge({
    name: 'payhooks_alarm_firing',
    help: 'Whether each alarm fires (1) or not (0); an alarm whose input is unknown here is 0 and shows in payhooks_alarm_unknown.',
    labelNames: ['alarm'],
    registers,
    async collect() {
      const read = await report();
      if (read) for (const check of read.checks) this.set({ alarm: check.name }, check.status === 'firing' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'payhooks_alarm_unknown',
    help: 'Whether an alarm could not be evaluated (1): its input is not available (no API key, a database that did not answer, --role worker).',
    labelNames: ['alarm'],
    registers,
    async collect() {
      const read = await report();
      if (read) for (const check of read.checks) this.set({ alarm: check.name }, check.status === 'unknown' ? 1 : 0);
    },
  });
  new Gauge({
    name: 'payhooks_alarms_evaluated_timestamp_seconds',
    help: 'When the alarms were last evaluated (unix seconds).',
    registers,
    async collect() {
      const read = await report();
      if (read) this.set(read.evaluatedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'payhooks_sweeper_last_run_timestamp_seconds',
    help: "When the gap sweeper's newest recorded run finished (unix seconds); absent until one is recorded.",
    registers,
    async collect() {
      const read = await report();
      if (read) setOrAbsent(this, read.sweeper && read.sweeper.finishedAt.getTime() / 1000);
    },
  });
  new Gauge({
    name: 'payhooks_sweeper_last_run_failed',
    help: "Whether the gap sweeper's newest run of any account failed (1: a part threw; the error is in GET /admin/api/health); absent until one is recorded.",
    registers,
    async collect() {
      const read = await report();
      // Any account's newest run failing counts: each account is swept as a run of its own.
      if (read) setOrAbsent(this, read.sweeper && (newestOfEach(read).some((run) => run.outcome === 'failed') ? 1 : 0));
    },
  });
  const interval = new Gauge({
    name: 'payhooks_sweeper_interval_seconds',
    help: 'How often the gap sweeper runs (sweeper.everyMs); absent where it does not run (no PAYHOOKS_API_KEY, sweeper.everyMs null, --role receiver).',
    registers,
  });
  setOrAbsent(interval, options.sweeperEveryMs === null ? null : options.sweeperEveryMs / 1000);
  new Gauge({
    name: 'payhooks_sweeper_last_run_findings',
    help: "What the gap sweeper's newest run of each account found, by account (accounts past the label cap summed as other): events missing from the inbox, re-sent, unrecovered; mirror rows drifted, repaired.",
    labelNames: ['finding', 'account'],
    registers,
    async collect() {
      const read = await report();
      if (!read?.sweeper) return;
      this.reset();
      for (const [account, counts] of findingsByLabel(newestOfEach(read), accountLabel))
        for (const finding of SWEEPER_FINDINGS) this.set({ finding, account }, counts[finding]);
    },
  });
  // Every alarm has its series from the first scrape on, so that a rule on a name never firing is never "absent".
  const firing = registry.getSingleMetric('payhooks_alarm_firing') as Gauge;
  for (const alarm of ALARM_NAMES) firing.set({ alarm }, 0);
}

type Findings = Record<(typeof SWEEPER_FINDINGS)[number], number>;

/**
 * What each account's newest run found, by the account's label: the accounts that share one (`other`) summed. A run
 * recorded before runs named their account was the default account's.
 */
function findingsByLabel(runs: SweeperRun[], accountLabel: (account: string) => string): Map<string, Findings> {
  const byLabel = new Map<string, Findings>();
  for (const run of runs) {
    const label = accountLabel(run.account ?? DEFAULT_ACCOUNT);
    const counts = byLabel.get(label) ?? { missing: 0, resent: 0, unrecovered: 0, drift: 0, repaired: 0 };
    byLabel.set(label, counts);
    counts.missing += run.reconcile?.missing ?? 0;
    counts.resent += run.reconcile?.resent ?? 0;
    counts.unrecovered += run.reconcile?.unrecovered ?? 0;
    counts.drift += run.verify?.drift ?? 0;
    counts.repaired += run.verify?.repaired ?? 0;
  }
  return byLabel;
}

/** The newest run of each account, or the newest run alone (recorded before runs named their account). */
function newestOfEach(read: HealthReport): SweeperRun[] {
  return read.sweeps.length ? read.sweeps : read.sweeper ? [read.sweeper] : [];
}

/**
 * Sets a gauge without labels, or takes its one series away when `value` is null: prom-client exports such a gauge
 * as 0 from the start, and a 0 timestamp reads as "50 years ago" to a staleness rule (docs/alerts.yaml).
 */
function setOrAbsent(gauge: Gauge, value: number | null): void {
  if (value === null) gauge.remove();
  else gauge.set(value);
}
