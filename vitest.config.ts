import { fileURLToPath } from 'node:url';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { LongestFirstSequencer } from './test/sequencer.js';
import { TIER_NAMES, TIERS, type Tier, tierProblems } from './test/tiers.js';

// Examples import `payhooks` as users do; in this repository that means the sources, not a build that may be stale.
const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

// A test file in no tier would silently never run under `npm test`: refuse to start, naming it.
const problems = tierProblems(source('.'));
if (problems.length > 0) throw new Error(`Test tiers (test/tiers.ts):\n  - ${problems.join('\n  - ')}`);

// One module graph per worker for these tiers too: a fresh graph per file re-imported the sources and compiled PGlite's
// WebAssembly again for every file (the db tier took 203 s with it, 158 s without, on the 2-core machine). A test file
// therefore leaves no global state behind: a tracer provider it registers is disabled in its afterAll, an environment
// variable it stubs is put back (unstubEnvs below).
const databases = { globalSetup: ['test/global-setup.ts'], setupFiles: ['test/setup-db.ts'], isolate: false };

/** What each tier needs beyond its files: the database tiers get the server check and the PGlite templates. */
const TIER_OPTIONS: Record<Tier, NonNullable<TestProjectInlineConfiguration['test']>> = {
  // One module graph for all unit files: re-importing the sources per file was most of the tier's time. A unit test
  // therefore keeps no state in a shared module (test/signature/support.ts pipes openssl's input instead of a temp dir).
  unit: { isolate: false },
  db: databases,
  e2e: databases,
  // After the others: these scenarios bound how long recovery may take and how much memory a flood may use, and beside
  // the e2e tier's processes they ran slower and cost more CPU in all (the effect chaos run 106 s instead of 60-69 s,
  // the whole suite 404 s instead of 367 s with the soak files queued first). Three at a time, like the other tiers.
  soak: { ...databases, sequence: { groupOrder: 1 } },
};

export default defineConfig({
  resolve: {
    alias: [
      { find: /^payhooks$/, replacement: source('./src/index.ts') },
      { find: /^payhooks\/(client|sync|service|simulator|testing)$/, replacement: source('./src/$1/index.ts') },
      { find: /^payhooks\/handlers\/direct-debit$/, replacement: source('./handlers/direct-debit/index.ts') },
    ],
  },
  test: {
    // Three test files at once on this 2-core machine: many files wait (on a partition, a blackhole, a child process
    // starting) as much as they compute, and a third file fills the cores meanwhile (idle CPU 17% with two, about 5%
    // with three; the whole suite 536 s with two, 463 s with three and the CLI's short commands on the baseline
    // compiler). vitest's default, one, ran the files one by one.
    maxWorkers: 3,
    testTimeout: 30_000,
    unstubEnvs: true,
    // The same order on a clean clone as on a checkout that ran before: the longest files first (test/sequencer.ts).
    sequence: { sequencer: LongestFirstSequencer },
    hookTimeout: 30_000,
    projects: TIER_NAMES.map((tier) => ({
      extends: true,
      test: { name: tier, include: [...TIERS[tier]], ...TIER_OPTIONS[tier] },
    })),
  },
});
