// docs/schema.sql is the schema the migrations produce, in one file: a migration that changes the schema without the
// dump being regenerated (`npm run schema:dump`) fails here, so review sees the schema's change beside the migration's.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { dumpSchema, SCHEMA_DUMP_PATH } from '../../scripts/dump-schema.js';
import { MIGRATIONS_DIR, MIRROR_MIGRATIONS_DIR } from '../../src/store/migrate.js';
import { pgUrl } from '../helpers/pg.js';

const committed = readFileSync(SCHEMA_DUMP_PATH, 'utf8');
/** Where a migration (re)creates a function of the claim. */
const CLAIM_FUNCTION = /CREATE (OR REPLACE )?FUNCTION claim_events(_single|_fair)?\(/;
const copies: string[] = [];
afterAll(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});

/**
 * A copy of payhooks' migrations with one statement of the claim changed where it is written today: in the last
 * migration that (re)creates one of the claim's functions (`claim_events`, `claim_events_single`, `claim_events_fair`:
 * an earlier one's change would be replaced by it, and show nowhere), the first `LIMIT x` of the first it creates made
 * `LIMIT 1 + x`. Resolves to the directory and the changed text to look for.
 */
function migrationsWithAChangedClaim(): { dir: string; changed: string } {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-migrations-'));
  copies.push(dir);
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  const claims = readdirSync(dir)
    .filter((name) => name.endsWith('.sql') && CLAIM_FUNCTION.test(readFileSync(join(dir, name), 'utf8')))
    .sort();
  expect(claims, 'the migrations that create the claim').not.toHaveLength(0);
  const path = join(dir, claims.at(-1) as string);
  const text = readFileSync(path, 'utf8');
  const start = text.search(CLAIM_FUNCTION);
  const body = text.slice(start);
  const limit = /LIMIT ([a-z_.]+)/.exec(body);
  expect(limit, 'a LIMIT in the claim').not.toBeNull();
  const changed = `LIMIT 1 + ${limit?.[1]}`;
  // Spliced, not String.replace with the body: the body holds `$$`, which a replacement string reads as `$`.
  writeFileSync(path, text.slice(0, start) + body.replace(limit?.[0] as string, () => changed));
  return { dir, changed };
}

describe.skipIf(!pgUrl)('docs/schema.sql', () => {
  it('is what the migrations produce today (run `npm run schema:dump` after adding one)', { timeout: 120_000 }, async () => {
    const dumped = await dumpSchema(pgUrl as string);
    // Not vacuous: the dump holds the tables and the claim it exists to show.
    expect(dumped).toMatch(/CREATE TABLE payhooks\.inbox_queue \(/);
    expect(dumped).toMatch(/CREATE TABLE payhooks_mirror\.invoices \(/);
    expect(dumped).toMatch(/CREATE FUNCTION payhooks\.claim_events\(/);
    expect(committed).toBe(dumped);
  });

  it('differs from the committed dump when a migration changes a statement of the claim', { timeout: 120_000 }, async () => {
    const { dir, changed } = migrationsWithAChangedClaim();
    const dumped = await dumpSchema(pgUrl as string, { migrations: dir, mirrorMigrations: MIRROR_MIGRATIONS_DIR });
    expect(committed).not.toContain(changed);
    expect(dumped).toContain(changed);
    expect(dumped).not.toBe(committed);
  });
});
