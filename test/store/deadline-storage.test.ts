import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { EvictingPool, withDeadline } from '../../src/store/evicting-pool.js';

/** One query through a connection of `pool`, as Kysely sends it (text first). */
async function sendQuery(pool: EvictingPool): Promise<unknown> {
  const connection = (await pool.connect()) as unknown as { query: (text: string) => Promise<unknown> };
  return connection.query('select 1');
}

/** A pg pool stand-in whose connections record the arguments of each query. */
function recordingPool(): { pool: EvictingPool; queries: unknown[][] } {
  const queries: unknown[][] = [];
  const client = {
    query: async (...args: unknown[]) => {
      queries.push(args);
      return { rows: [] };
    },
    release: () => undefined,
  };
  const fake = { on: () => undefined, connect: async () => client, end: async () => undefined };
  return { pool: new EvictingPool(fake as unknown as pg.Pool), queries };
}

const timeoutOf = (args: unknown[] | undefined) => (args?.[0] as { query_timeout?: number } | string | undefined) ?? undefined;

describe('withDeadline', () => {
  it('keeps each deadline to its own work while others start and end around it, and none past them', async () => {
    const { pool, queries } = recordingPool();
    let releaseFirst!: () => void;
    const firstGate = new Promise<void>((resolve) => (releaseFirst = resolve));
    let releaseSecond!: () => void;
    const secondGate = new Promise<void>((resolve) => (releaseSecond = resolve));
    const query = () => sendQuery(pool);
    const first = withDeadline(performance.now() + 60_000, async () => {
      await firstGate;
      await query();
    });
    const second = withDeadline(performance.now() + 30_000, async () => {
      await secondGate;
      await query();
    });
    releaseFirst();
    await first;
    // The first has ended: the second still runs under its own deadline.
    releaseSecond();
    await second;
    expect(timeoutOf(queries[0])).toMatchObject({ query_timeout: expect.any(Number) });
    expect((timeoutOf(queries[0]) as { query_timeout: number }).query_timeout).toBeGreaterThan(30_000);
    expect((timeoutOf(queries[1]) as { query_timeout: number }).query_timeout).toBeLessThanOrEqual(30_000);
    // Outside any deadline (and after the storage was switched off): sent as it is, with no timeout.
    await query();
    expect(queries[2]).toEqual(['select 1']);
    // And on again for the next one.
    await withDeadline(performance.now() + 10_000, query);
    expect((timeoutOf(queries[3]) as { query_timeout: number }).query_timeout).toBeLessThanOrEqual(10_000);
  });

  it('passes a rejection on, and a deadline already passed refuses the query', async () => {
    const { pool } = recordingPool();
    await expect(withDeadline(performance.now() + 1000, async () => Promise.reject(new Error('no')))).rejects.toThrow('no');
    await expect(withDeadline(performance.now() - 1, () => sendQuery(pool))).rejects.toThrow(/deadline passed/);
  });
});
