// `npm run bench [verify] [ingest] [drain] [cost] [effects] [burst] [mirror-verify] [year] [migration] [tracing] [accounts]`: each comparison in one run, against its baseline
// measured in the same run, written to bench/results.md (medians, ratios, targets met or missed). Without arguments: all.
// BENCH_SCALE=0.1 runs a tenth of the counts and seconds for a quick look; DATABASE_URL picks the server.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { benchAccounts } from './sections/accounts.js';
import { benchBurst } from './sections/burst.js';
import { benchCost } from './sections/cost.js';
import { benchDrain } from './sections/drain.js';
import { benchEffects } from './sections/effects.js';
import { benchIngest } from './sections/ingest.js';
import { benchMigration } from './sections/migration.js';
import { benchMirrorVerify } from './sections/mirror-verify.js';
import { benchTracing } from './sections/tracing.js';
import { benchVerify } from './sections/verify.js';
import { benchYear } from './sections/year.js';
import { databaseUrl, serverFacts } from './lib/database.js';
import { root } from './lib/processes.js';
import { renderSection } from './lib/report.js';
import { rounds, scale } from './lib/stats.js';

const sections = {
  verify: benchVerify,
  ingest: benchIngest,
  drain: benchDrain,
  accounts: benchAccounts,
  effects: benchEffects,
  cost: benchCost,
  burst: benchBurst,
  'mirror-verify': benchMirrorVerify,
  year: benchYear,
  migration: benchMigration,
  tracing: benchTracing,
} as const;
type SectionName = keyof typeof sections;

const asked = process.argv.slice(2);
const unknown = asked.filter((name) => !(name in sections));
if (unknown.length > 0) {
  console.error(
    `npm run bench: no section ${unknown.join(', ')}; the sections are ${Object.keys(sections).join(', ')} (none: all of them).`,
  );
  process.exit(2);
}
const chosen = (asked.length > 0 ? asked : Object.keys(sections)) as SectionName[];
if (!existsSync(join(root, 'dist/cli/main.js'))) {
  console.error(
    'npm run bench: the compiled CLI is missing; run `npm run build` first (the bench starts `payhooks serve` as users run it).',
  );
  process.exit(2);
}

function version(pkg: string): string {
  return (JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
}

const started = new Date();
const stamp = (date: Date) => `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
const command = `npm run bench${asked.length > 0 ? ` ${asked.join(' ')}` : ''}`;
const scaleNote = scale() === 1 ? '' : ` **At BENCH_SCALE=${scale()}: scaled counts and durations, not comparable with the targets.**`;
// Said in each section too: a run of some sections keeps the others, which may come from another machine.
/** The clock in MHz, 0 when unknown: Node's cpus() says 0 on these virtual machines, and /proc/cpuinfo has it. */
function clockMhz(): number {
  const fromNode = cpus()[0]?.speed ?? 0;
  if (fromNode > 0) return fromNode;
  const info = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  return Number(/^cpu MHz\s*:\s*([\d.]+)/m.exec(info)?.[1] ?? 0);
}
// With its clock: two machines of one model name (AMD EPYC at 2.1 and at 2.6 GHz) measured differently.
const mhz = clockMhz();
const clock = mhz > 0 ? ` at ${(mhz / 1000).toFixed(1)} GHz` : '';
const cpuModel = `${cpus().length} × ${cpus()[0]?.model.trim() ?? 'unknown CPU'}${clock}`;
const fresh = new Map<string, string>();
for (const name of chosen) {
  console.info(`bench: ${name}…`);
  const section = await sections[name]();
  fresh.set(section.title, renderSection(section, `Measured ${stamp(new Date())} on ${cpuModel} by \`${command}\`.${scaleNote}`));
  for (const target of section.targets) console.info(`  ${target.met ? 'met' : 'MISSED'}: ${target.text}`);
}

// A run of some sections keeps the others from the file as they were (each says when it was measured).
const resultsFile = join(root, 'bench/results.md');
const kept = new Map<string, string>();
if (existsSync(resultsFile)) {
  for (const part of readFileSync(resultsFile, 'utf8')
    .split(/^(?=## )/m)
    .slice(1))
    kept.set(part.slice(3, part.indexOf('\n')).trim(), part.trimEnd());
}
const order = [
  'Verify',
  'Ingest',
  'Drain',
  'Per-event cost',
  'Per-event cost before issue 27',
  'Effects',
  'Burst',
  'Mirror verify',
  'Compressed year',
  'Migration to partitions',
  'Tracing',
  'Accounts',
];
const body = order.flatMap((title) => {
  const text = fresh.get(title) ?? kept.get(title);
  return text === undefined ? [] : [text.trimEnd(), ''];
});

const header = [
  '# Benchmark results',
  '',
  `Last written by \`${command}\` on ${stamp(started)}, in ${Math.round((Date.now() - started.getTime()) / 1000)} s; each section says when it was measured.`,
  '',
  `- machine of this run: ${cpuModel}, ${Math.round(totalmem() / 2 ** 30)} GB RAM, ${process.platform} ${process.arch}`,
  `- Node ${process.version}; payhooks ${version('..')}; pg ${version('pg')}, kysely ${version('kysely')}, @electric-sql/pglite ${version('@electric-sql/pglite')}, express ${version('express')}, autocannon ${version('autocannon')}, graphile-worker ${version('graphile-worker')} (bench reference)`,
  `- PostgreSQL at ${new URL(databaseUrl).host}: ${await serverFacts()}`,
  `- ${rounds()} rounds per comparison, alternating between contenders; the figures are medians; ratios are against the baseline of the same run.`,
  '',
];
writeFileSync(resultsFile, `${[...header, ...body].join('\n').trimEnd()}\n`);
console.info('bench: wrote bench/results.md');
