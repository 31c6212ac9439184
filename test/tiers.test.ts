import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { expectedSeconds, MEASURED_SECONDS } from './sequencer.js';
import { TIER_NAMES, TIERS, testFiles, tierProblems } from './tiers.js';

const root = fileURLToPath(new URL('..', import.meta.url));

describe('the test tiers (test/tiers.ts)', () => {
  it('hold every test file exactly once, and only files that exist', () => {
    expect(tierProblems(root)).toEqual([]);
    const listed = TIER_NAMES.flatMap((tier) => TIERS[tier]);
    expect([...listed].sort()).toEqual(testFiles(root));
  });

  it('name a test file that is in no tier, and a listed file that is gone', () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'payhooks-tiers-'));
    mkdirSync(join(elsewhere, 'test', 'service'), { recursive: true });
    writeFileSync(join(elsewhere, 'test', 'service', 'new.test.ts'), '');
    const problems = tierProblems(elsewhere);
    expect(problems).toContain('test/service/new.test.ts is in no tier: add it to one list in test/tiers.ts (see docs/testing.md)');
    expect(problems).toContain('test/cli/cli.test.ts is listed in the e2e tier of test/tiers.ts but does not exist');
  });

  it("the sequencer's measured times name files that exist, and place an unlisted file by its size", () => {
    expect(Object.keys(MEASURED_SECONDS).filter((file) => !testFiles(root).includes(file))).toEqual([]);
    expect(expectedSeconds('test/worker/effects-chaos.test.ts', root)).toBe(60);
    expect(expectedSeconds('test/tiers.test.ts', root)).toBeGreaterThan(0);
    expect(expectedSeconds('test/tiers.test.ts', root)).toBeLessThan(8);
  });
});
