import type { TestProject } from 'vitest/node';
import pg from 'pg';

/** The real-server suites use TEST_DATABASE_URL, or the machine's local server. */
const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function reachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string | null;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const ok = await reachable();
  if (!ok && process.env.CI) {
    throw new Error(`CI needs a PostgreSQL server for the real-server suites, and none answered at ${url}`);
  }
  if (!ok) {
    console.warn(`\n[payhooks tests] No PostgreSQL server at ${url}: the real-server suites are SKIPPED; PGlite suites still run.\n`);
  }
  project.provide('pgUrl', ok ? url : null);
}
