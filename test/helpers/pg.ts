import { inject } from 'vitest';

/** The URL of the real PostgreSQL server for this run, or null when none is reachable (suites skip). */
export const pgUrl: string | null = inject('pgUrl');

/** A schema name unique to one test file or case, so suites never see each other's rows. */
export function uniqueSchema(prefix = 't'): string {
  return `${prefix}_${process.pid}_${Math.random().toString(36).slice(2, 10)}`;
}
