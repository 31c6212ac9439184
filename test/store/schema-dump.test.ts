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
const copies: string[] = [];
afterAll(() => {
  for (const dir of copies) rmSync(dir, { recursive: true, force: true });
});

/**
 * A copy of payhooks' migrations with one statement of the claim (`LIMIT s.offered`, the fair share) changed where the
 * claim is written last (the latest migration that creates claim_events: earlier ones are replaced by it).
 */
function migrationsWithAChangedClaim(): string {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-migrations-'));
  copies.push(dir);
  cpSync(MIGRATIONS_DIR, dir, { recursive: true });
  const claims = readdirSync(dir)
    .filter((name) => name.endsWith('.sql') && readFileSync(join(dir, name), 'utf8').includes('CREATE FUNCTION claim_events'))
    .sort();
  const latest = claims.at(-1);
  expect(latest, 'a migration that creates claim_events').toBeDefined();
  const path = join(dir, latest as string);
  const text = readFileSync(path, 'utf8');
  expect(text, `the claim of ${latest} limits each account's share with "LIMIT s.offered"`).toContain('LIMIT s.offered');
  writeFileSync(path, text.replace('LIMIT s.offered', 'LIMIT s.offered + 1'));
  return dir;
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
    const dumped = await dumpSchema(pgUrl as string, {
      migrations: migrationsWithAChangedClaim(),
      mirrorMigrations: MIRROR_MIGRATIONS_DIR,
    });
    expect(dumped).toContain('LIMIT s.offered + 1');
    expect(dumped).not.toBe(committed);
  });
});
