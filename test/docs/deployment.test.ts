// The sizing table of docs/deployment.md is the bench's: each measured figure must be a figure of the bench section it
// names in bench/results.md, the section's date and machine must be in the page, and the last column must be what the
// measured figure gives. A bench run that changes the figures makes this fail until the page follows.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const page = readFileSync(new URL('../../docs/deployment.md', import.meta.url), 'utf8');
const results = readFileSync(new URL('../../bench/results.md', import.meta.url), 'utf8');

/** The text of `## <title>` in bench/results.md, up to the next section. */
function section(title: string): string {
  const start = results.indexOf(`\n## ${title}\n`);
  if (start === -1) throw new Error(`bench/results.md has no section "${title}"`);
  const end = results.indexOf('\n## ', start + 1);
  return results.slice(start, end === -1 ? undefined : end);
}

/** Two significant figures, written with thousands separators, as the page writes rates. */
function twoFigures(value: number): string {
  const magnitude = 10 ** (Math.floor(Math.log10(value)) - 1);
  return (Math.round(value / magnitude) * magnitude).toLocaleString('en-US');
}

/** What a measured figure gives, by its unit. */
function derived(measured: string): string {
  const figure = Number(/^([\d,]+)/.exec(measured)?.[1]?.replace(/,/g, ''));
  if (/µs of CPU per/.test(measured)) return `${twoFigures(1e6 / figure)} events/s per core`;
  if (/bytes per event/.test(measured)) return `${((figure * 1e6) / 1e9).toFixed(1)} GB a day`;
  if (/MB per 100,000 events/.test(measured)) return `${((figure * 10) / 1000).toFixed(1)} GB a day kept`;
  throw new Error(`no rule for the unit of "${measured}"`);
}

const rows = (() => {
  const table = /<!-- sizing:start[^>]*-->([\s\S]*?)<!-- sizing:end -->/.exec(page)?.[1] ?? '';
  return table
    .split('\n')
    .filter((line) => line.startsWith('|') && !line.startsWith('|---') && !line.startsWith('| role'))
    .map((line) => {
      const [role, measured, bench, perCore] = line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim());
      return { role: role!, measured: measured!, bench: bench!, perCore: perCore! };
    });
})();

describe('the sizing table of docs/deployment.md', () => {
  it('has a row for each role and for the disk', () => {
    expect(rows.length).toBeGreaterThanOrEqual(7);
    for (const role of ['receiver', 'worker', 'PostgreSQL', 'WAL', 'history on disk'])
      expect(
        rows.some((row) => row.role.includes(role)),
        role,
      ).toBe(true);
  });

  it.each(rows.map((row) => [row.role, row] as const))(
    '%s: its figure is in bench/results.md, and the last column follows from it',
    (_role, row) => {
      const figure = /^([\d,]+)/.exec(row.measured)?.[1];
      expect(figure, row.measured).toBeDefined();
      const text = section(row.bench);
      // A cell of one of the section's tables.
      expect(text).toContain(`| ${figure} |`);
      expect(row.perCore).toBe(derived(row.measured));
    },
  );

  it("names each section's date and machine", () => {
    for (const title of new Set(rows.map((row) => row.bench))) {
      const measured = /_Measured (\d{4}-\d\d-\d\d) (\d\d:\d\d) UTC on (.+?) by /.exec(section(title));
      expect(measured, title).not.toBeNull();
      const [, day, time, machine] = measured!;
      expect(page).toContain(day);
      expect(page).toContain(`${time} UTC (${title})`);
      expect(page).toContain(machine);
    }
  });
});
