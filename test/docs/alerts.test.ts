// docs/alerts.yaml: Prometheus alerting rules, one per alarm, each with a runbook in docs/troubleshooting.md. The
// series each expression names are checked against what payhooks registers (read from a registry built as serve
// builds its own), so a renamed series cannot leave a rule that never fires.
import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { ALARM_NAMES } from '../../src/alarms/alarm-checks.js';
import type { HealthReport } from '../../src/alarms/health-report.js';
import { registerHealthMetrics } from '../../src/metrics/health-metrics.js';
import { boundedLabels, createPayhooksMetrics } from '../../src/metrics/payhooks-metrics.js';
import { webhookRoute } from '../../src/service/routes/webhook-route.js';

const root = new URL('../../', import.meta.url);
const read = (path: string) => readFileSync(new URL(path, root), 'utf8');

const duration = z.string().regex(/^(\d+(ms|s|m|h|d|w|y))+$/, 'a Prometheus duration such as 5m');
const ruleFile = z.strictObject({
  groups: z
    .array(
      z.strictObject({
        name: z.string().min(1),
        interval: duration.optional(),
        rules: z
          .array(
            z.strictObject({
              alert: z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/),
              expr: z.string().min(1),
              for: duration.optional(),
              labels: z.record(z.string(), z.string()).optional(),
              annotations: z.strictObject({ summary: z.string().min(1), description: z.string().min(1), runbook: z.string() }),
            }),
          )
          .min(1),
      }),
    )
    .min(1),
});

/** Every series payhooks serve exports: its own, the alarms' and the sweeper's, the webhook route's. */
function exportedSeries(): Set<string> {
  const registry = new Registry();
  const never = () => Promise.reject(new Error('not scraped in this test'));
  createPayhooksMetrics(registry, { store: never });
  registerHealthMetrics(registry, never);
  webhookRoute(undefined, registry);
  const names = new Set<string>();
  for (const metric of registry.getMetricsAsArray()) {
    names.add(metric.name);
    if (String(metric.type) === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${metric.name}${suffix}`);
  }
  return names;
}

const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'offset']);

/** The series a PromQL expression names: identifiers outside strings, label matchers and ranges, not functions or keywords. */
function seriesOf(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    // The label lists of aggregations and vector matching: `by (job)`, `on (instance)`, `group_left (name)`.
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ');
  return [...bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*(\()?)/g)]
    .filter((match) => match[1] === undefined)
    .map((match) => match[0])
    .filter((name) => !KEYWORDS.has(name));
}

/** GitHub's heading anchors of a Markdown page (as test/docs/links.test.ts makes them). */
function anchorsOf(markdown: string): Set<string> {
  const text = markdown.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
  return new Set(
    [...text.matchAll(/^#{1,6}\s+(.+?)\s*$/gm)].map(([, heading]) =>
      heading!
        .replace(/`/g, '')
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  );
}

describe('docs/alerts.yaml', () => {
  const rules = ruleFile.parse(parse(read('docs/alerts.yaml'))).groups.flatMap((group) => group.rules);

  it('parses as Prometheus rules, and every series an expression names is one payhooks exports', () => {
    const exported = exportedSeries();
    expect(exported.has('payhooks_alarm_firing')).toBe(true);
    for (const rule of rules) {
      const named = seriesOf(rule.expr);
      expect(named.length, `${rule.alert} names a series`).toBeGreaterThan(0);
      for (const name of named) expect(exported.has(name), `${rule.alert}: ${name} is exported`).toBe(true);
    }
  });

  it('the reading of expressions sees a series that is not exported', () => {
    expect(seriesOf('rate(payhooks_no_such_total{status="dead"}[5m]) > 0 and on(instance) up == 1')).toEqual([
      'payhooks_no_such_total',
      'up',
    ]);
  });

  it('has a rule for every alarm, each with a runbook that is a section of docs/troubleshooting.md', () => {
    for (const alarm of ALARM_NAMES) {
      expect(
        rules.some((rule) => rule.expr.includes(`alarm="${alarm}"`)),
        `a rule for ${alarm}`,
      ).toBe(true);
    }
    const anchors = anchorsOf(read('docs/troubleshooting.md'));
    for (const rule of rules) {
      const [page, anchor] = rule.annotations.runbook.split('#');
      expect(page, rule.alert).toBe('docs/troubleshooting.md');
      expect(anchors.has(anchor!), `${rule.alert}: #${anchor} is a heading of troubleshooting.md`).toBe(true);
    }
  });
});

/** The sample lines of `series` (no labels) in a scrape, not its HELP and TYPE lines. */
/** The sample lines of one series, with or without labels. */
function samplesOf(scrape: string, series: string): string[] {
  return scrape.split('\n').filter((line) => line.startsWith(`${series} `) || line.startsWith(`${series}{`));
}

describe('the sweeper series the staleness rule reads', () => {
  const finishedAt = new Date('2026-11-29T03:00:00Z');
  const report = (sweeper: HealthReport['sweeper'], sweeps: HealthReport['sweeps'] = []): HealthReport => ({
    status: 'ok',
    evaluatedAt: finishedAt,
    checks: [],
    sweeper,
    sweeps,
  });
  const run: NonNullable<HealthReport['sweeper']> = {
    id: '1',
    trigger: 'sweeper',
    account: 'default',
    startedAt: finishedAt,
    finishedAt,
    outcome: 'failed',
    reconcile: null,
    verify: null,
    findings: [],
    notes: [],
    error: 'the API did not answer',
  };

  it('before any run: no timestamp and no failure flag (a 0 read as a run 56 years ago); the interval where the sweeper runs', async () => {
    const registry = new Registry();
    registerHealthMetrics(registry, async () => report(null), { sweeperEveryMs: 3_600_000 });
    const scrape = await registry.metrics();
    expect(scrape).toContain('# TYPE payhooks_sweeper_last_run_timestamp_seconds gauge');
    expect(samplesOf(scrape, 'payhooks_sweeper_last_run_timestamp_seconds')).toEqual([]);
    expect(samplesOf(scrape, 'payhooks_sweeper_last_run_failed')).toEqual([]);
    expect(samplesOf(scrape, 'payhooks_sweeper_interval_seconds')).toEqual(['payhooks_sweeper_interval_seconds 3600']);
  });

  it('after a run: its time and outcome; no interval where the sweeper does not run (no API key)', async () => {
    const registry = new Registry();
    let sweeper: HealthReport['sweeper'] = null;
    registerHealthMetrics(registry, async () => report(sweeper), { sweeperEveryMs: null });
    expect(samplesOf(await registry.metrics(), 'payhooks_sweeper_last_run_timestamp_seconds')).toEqual([]);
    sweeper = run;
    const scrape = await registry.metrics();
    expect(samplesOf(scrape, 'payhooks_sweeper_last_run_timestamp_seconds')).toEqual([
      `payhooks_sweeper_last_run_timestamp_seconds ${finishedAt.getTime() / 1000}`,
    ]);
    expect(samplesOf(scrape, 'payhooks_sweeper_last_run_failed')).toEqual(['payhooks_sweeper_last_run_failed 1']);
    expect(samplesOf(scrape, 'payhooks_sweeper_interval_seconds')).toEqual([]);
  });

  it('with several accounts, each swept apart: failed when any newest run failed, the findings by account', async () => {
    const registry = new Registry();
    const later = new Date(finishedAt.getTime() + 60_000);
    const south = {
      ...run,
      id: '2',
      account: 'gym-south',
      finishedAt: later,
      outcome: 'found' as const,
      error: null,
      verify: { sample: 20, checked: 40, drift: 2, repaired: 1 },
    };
    const north = { ...run, account: 'gym-north', verify: { sample: 20, checked: 40, drift: 3, repaired: 3 } };
    registerHealthMetrics(registry, async () => report(south, [south, north]), { sweeperEveryMs: 3_600_000 });
    const scrape = await registry.metrics();
    expect(samplesOf(scrape, 'payhooks_sweeper_last_run_timestamp_seconds')).toEqual([
      `payhooks_sweeper_last_run_timestamp_seconds ${later.getTime() / 1000}`,
    ]);
    // The newest run (gym-south's) did not fail; gym-north's newest did.
    expect(samplesOf(scrape, 'payhooks_sweeper_last_run_failed')).toEqual(['payhooks_sweeper_last_run_failed 1']);
    const findings = samplesOf(scrape, 'payhooks_sweeper_last_run_findings');
    expect(findings).toHaveLength(10);
    expect(findings).toContain('payhooks_sweeper_last_run_findings{finding="drift",account="gym-south"} 2');
    expect(findings).toContain('payhooks_sweeper_last_run_findings{finding="repaired",account="gym-south"} 1');
    expect(findings).toContain('payhooks_sweeper_last_run_findings{finding="drift",account="gym-north"} 3');
    expect(findings).toContain('payhooks_sweeper_last_run_findings{finding="repaired",account="gym-north"} 3');
  });

  it('names the accounts past the label cap other, their findings summed, as the other series do', async () => {
    const registry = new Registry();
    const swept = ['gym-a', 'gym-b', 'gym-c'].map((account, n) => ({
      ...run,
      id: String(n + 1),
      account,
      outcome: 'found' as const,
      error: null,
      verify: { sample: 20, checked: 40, drift: n + 1, repaired: 0 },
    }));
    // The cap of one, as createPayhooksMetrics(registry, { accountLabels: 1 }).accountLabel would have it.
    registerHealthMetrics(registry, async () => report(swept[0]!, swept), { sweeperEveryMs: null, accountLabel: boundedLabels(1) });
    const drift = samplesOf(await registry.metrics(), 'payhooks_sweeper_last_run_findings').filter((line) => line.includes('"drift"'));
    expect(drift.sort()).toEqual([
      'payhooks_sweeper_last_run_findings{finding="drift",account="gym-a"} 1',
      'payhooks_sweeper_last_run_findings{finding="drift",account="other"} 5',
    ]);
  });
});

const ruleTests = z.object({
  rule_files: z.array(z.string()),
  tests: z.array(
    z.object({
      alert_rule_test: z.array(z.object({ alertname: z.string(), exp_alerts: z.array(z.unknown()) })),
    }),
  ),
});

describe('docs/alerts.test.yaml', () => {
  it('tests docs/alerts.yaml, and every rule there both firing and quiet', () => {
    const cases = ruleTests.parse(parse(read('docs/alerts.test.yaml')));
    expect(cases.rule_files).toEqual(['alerts.yaml']);
    const alerts = ruleFile
      .parse(parse(read('docs/alerts.yaml')))
      .groups.flatMap((group) => group.rules)
      .map((rule) => rule.alert);
    expect(alerts.length).toBeGreaterThan(0);
    const checks = cases.tests.flatMap((test) => test.alert_rule_test);
    for (const alert of alerts) {
      const mine = checks.filter((check) => check.alertname === alert);
      expect(
        mine.some((check) => check.exp_alerts.length > 0),
        `${alert} has a case where it fires`,
      ).toBe(true);
      expect(
        mine.some((check) => check.exp_alerts.length === 0),
        `${alert} has a case where it stays quiet`,
      ).toBe(true);
    }
    for (const check of checks) expect(alerts, `${check.alertname} is a rule of docs/alerts.yaml`).toContain(check.alertname);
  });
});
