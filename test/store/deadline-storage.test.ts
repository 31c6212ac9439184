import type { PostgresPool } from 'kysely';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { EvictingPool } from '../../src/store/evicting-pool.js';

/** One query through a connection of `pool`, as Kysely sends it (text first). */
async function sendQuery(pool: PostgresPool): Promise<unknown> {
  const connection = (await pool.connect()) as unknown as { query: (text: string) => Promise<unknown> };
  return connection.query('select 1');
}

/** A pg pool stand-in whose connections record the arguments of each query; `connect` waits for `gate` when given. */
function recordingPool(gate?: Promise<void>): { pool: EvictingPool; queries: unknown[][] } {
  const queries: unknown[][] = [];
  const client = {
    query: async (...args: unknown[]) => {
      queries.push(args);
      return { rows: [] };
    },
    release: () => undefined,
  };
  const fake = {
    on: () => undefined,
    connect: async () => {
      await gate;
      return client;
    },
    end: async () => undefined,
  };
  return { pool: new EvictingPool(fake as unknown as pg.Pool), queries };
}

const timeoutOf = (args: unknown[] | undefined) => (args?.[0] as { query_timeout?: number } | undefined)?.query_timeout;

describe('EvictingPool.until', () => {
  it('bounds each query sent through a view by its own deadline, and leaves the pool itself without one', async () => {
    const { pool, queries } = recordingPool();
    const later = pool.until(performance.now() + 60_000);
    const sooner = pool.until(performance.now() + 30_000);
    // Interleaved: each connection keeps the deadline of the view it came from.
    const [laterConnection, soonerConnection] = await Promise.all([later.connect(), sooner.connect()]);
    await (soonerConnection as unknown as { query: (text: string) => Promise<unknown> }).query('select 1');
    await (laterConnection as unknown as { query: (text: string) => Promise<unknown> }).query('select 1');
    expect(timeoutOf(queries[0])).toBeLessThanOrEqual(30_000);
    expect(timeoutOf(queries[1])).toBeGreaterThan(30_000);
    expect(timeoutOf(queries[1])).toBeLessThanOrEqual(60_000);
    // Straight from the pool: sent as it is, with no timeout of its own.
    await sendQuery(pool);
    expect(queries[2]).toEqual(['select 1']);
  });

  it('refuses a query past the deadline, stops waiting for a connection at it, and ends nothing when ended', async () => {
    const { pool, queries } = recordingPool();
    await expect(sendQuery(pool.until(performance.now() - 1))).rejects.toThrow(/waiting for a database connection: the deadline passed/);
    // A connection taken in time, a query sent too late: refused, not sent.
    const connection = (await pool.until(performance.now() + 20).connect()) as unknown as { query: (text: string) => Promise<unknown> };
    await new Promise((resolve) => setTimeout(resolve, 30));
    await expect(connection.query('select 1')).rejects.toThrow(/sending a query: the deadline passed/);
    expect(queries).toEqual([]);
    let open!: () => void;
    const slow = recordingPool(new Promise<void>((resolve) => (open = resolve)));
    await expect(sendQuery(slow.pool.until(performance.now() + 50))).rejects.toThrow(
      /waiting for a database connection: the deadline passed/,
    );
    open();
    const view = pool.until(performance.now() + 60_000);
    await view.end();
    await expect(sendQuery(pool)).resolves.toEqual({ rows: [] });
  });
});
