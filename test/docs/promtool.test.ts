// docs/alerts.yaml checked by Prometheus' own tool: `promtool check rules` on it, and `promtool test rules` on
// docs/alerts.test.yaml, the cases of every rule (firing and quiet). And the cases can fail: the rules as they were
// before (a dead-events rule on increase() of a gauge, a sweeper rule on a timestamp exported as 0) fail them.
// promtool comes with Debian's `prometheus` package, which .ci/run installs; without it the file is skipped with a
// warning, and with CI=true it fails instead.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const PROMTOOL = '/usr/bin/promtool';
const docs = fileURLToPath(new URL('../../docs/', import.meta.url));
const available = existsSync(PROMTOOL);
if (!available && process.env.CI === 'true')
  throw new Error(`CI needs promtool at ${PROMTOOL} (apt-get install prometheus; .ci/run does it)`);
if (!available) console.warn(`promtool tests of docs/alerts.yaml skipped: no promtool at ${PROMTOOL} (apt-get install prometheus)`);

/** promtool's exit code and everything it printed; it never waits longer than `timeout`. */
function promtool(args: string[], cwd: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve, reject) => {
    execFile(PROMTOOL, args, { cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`;
      if (error === null) return resolve({ code: 0, output });
      if (typeof error.code === 'number') return resolve({ code: error.code, output });
      reject(error);
    });
  });
}

/** The expressions of the two rules as they were shipped before they were fixed (issue 46, findings 7 and 8). */
const OLD_EXPRESSIONS = {
  PayhooksDeadEvents: 'payhooks_alarm_firing{alarm="dead_events"} == 1 or increase(payhooks_events{status="dead"}[1h]) > 0',
  PayhooksSweeperStale: 'time() - payhooks_sweeper_last_run_timestamp_seconds > 3 * 3600 or payhooks_sweeper_last_run_failed == 1',
};

describe.skipIf(!available)('docs/alerts.yaml under promtool', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'payhooks-promtool-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('promtool check rules: the file is valid, eleven rules', { timeout: 60_000 }, async () => {
    const { code, output } = await promtool(['check', 'rules', 'alerts.yaml'], docs);
    expect(output).toContain('SUCCESS: 11 rules found');
    expect(code).toBe(0);
  });

  it('promtool test rules: every case of docs/alerts.test.yaml holds', { timeout: 60_000 }, async () => {
    const { code, output } = await promtool(['test', 'rules', 'alerts.test.yaml'], docs);
    expect(output).not.toContain('FAILED');
    expect(output).toContain('SUCCESS');
    expect(code).toBe(0);
  });

  it('the cases fail the rules as they were: replayed dead events, no sweeper run, no API key', { timeout: 60_000 }, async () => {
    let rules = readFileSync(join(docs, 'alerts.yaml'), 'utf8');
    for (const [alert, expr] of Object.entries(OLD_EXPRESSIONS)) {
      // Each rule's expr is the first key after its name: replaced up to the labels that follow it.
      const rule = new RegExp(`(- alert: ${alert}\\n)[\\s\\S]*?(\\n {8}(?:for|labels):)`);
      expect(rules, alert).toMatch(rule);
      rules = rules.replace(rule, `$1        expr: '${expr}'$2`);
    }
    writeFileSync(join(scratch, 'alerts.yaml'), rules);
    copyFileSync(join(docs, 'alerts.test.yaml'), join(scratch, 'alerts.test.yaml'));
    const { code, output } = await promtool(['test', 'rules', 'alerts.test.yaml'], scratch);
    expect(code).toBe(1);
    // The ten dead events of which seven are replayed, and an app's replay (3 to 1): the gauge's fall read as a
    // counter reset.
    expect(output).toContain('alertname: PayhooksDeadEvents, time: 1h2m');
    expect(output).toContain('alertname: PayhooksDeadEvents, time: 1h40m');
    // Earlier versions' 0 for "no run yet", and an old run where the sweeper does not run (no API key).
    expect(output).toMatch(/alertname: PayhooksSweeperStale, time: 5h,[\s\S]*instance="old:8787"/);
    expect(output).toMatch(/alertname: PayhooksSweeperStale, time: 5h,[\s\S]*instance="payhooks:8787"/);
  });
});
