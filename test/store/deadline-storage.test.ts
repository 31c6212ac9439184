import type { PostgresPool } from 'kysely';
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { sleep } from '../../src/internal/sleep.js';
import { EvictingPool } from '../../src/store/evicting-pool.js';

/** A connection as Kysely uses it: queries sent text first. */
type Connection = { query: (text: string) => Promise<unknown> };

/** A connection of `pool`. */
async function connectionOf(pool: PostgresPool): Promise<Connection> {
  return (await pool.connect()) as unknown as Connection;
}

/** One query through a connection of `pool`. */
async function sendQuery(pool: PostgresPool): Promise<unknown> {
  return (await connectionOf(pool)).query('select 1');
}

/**
 * A pg pool stand-in whose connections record the arguments of each query; `connect` waits for `gate` when given, and
 * `ended` says whether the pool was ended.
 */
function recordingPool(gate?: Promise<void>): { pool: EvictingPool; queries: unknown[][]; ended: () => boolean } {
  const queries: unknown[][] = [];
  let ended = false;
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
    end: async () => {
      ended = true;
    },
  };
  return { pool: new EvictingPool(fake as unknown as pg.Pool), queries, ended: () => ended };
}

const timeoutOf = (args: unknown[] | undefined) => (args?.[0] as { query_timeout?: number } | undefined)?.query_timeout;

describe('EvictingPool.until', () => {
  it('bounds each query sent through a view by its own deadline, and leaves the pool itself without one', async () => {
    const { pool, queries } = recordingPool();
    const later = pool.until(performance.now() + 60_000);
    const sooner = pool.until(performance.now() + 30_000);
    // Interleaved: each connection keeps the deadline of the view it came from.
    const [laterConnection, soonerConnection] = await Promise.all([connectionOf(later), connectionOf(sooner)]);
    await soonerConnection.query('select 1');
    await laterConnection.query('select 1');
    expect(timeoutOf(queries[0])).toBeLessThanOrEqual(30_000);
    expect(timeoutOf(queries[1])).toBeGreaterThan(30_000);
    expect(timeoutOf(queries[1])).toBeLessThanOrEqual(60_000);
    // Straight from the pool: sent as it is, with no timeout of its own.
    await sendQuery(pool);
    expect(queries[2]).toEqual(['select 1']);
  });

  it('refuses a query past the deadline, stops waiting for a connection at it, and ends nothing when ended', async () => {
    const { pool, queries, ended } = recordingPool();
    await expect(sendQuery(pool.until(performance.now() - 1))).rejects.toThrow(/waiting for a database connection: the deadline passed/);
    // A connection taken in time, a query sent too late: refused, not sent.
    const connection = await connectionOf(pool.until(performance.now() + 200));
    await sleep(250);
    await expect(connection.query('select 1')).rejects.toThrow(/sending a query: the deadline passed/);
    expect(queries).toEqual([]);
    let open!: () => void;
    const slow = recordingPool(new Promise<void>((resolve) => (open = resolve)));
    await expect(sendQuery(slow.pool.until(performance.now() + 50))).rejects.toThrow(
      /waiting for a database connection: the deadline passed/,
    );
    open();
    await pool.until(performance.now() + 60_000).end();
    expect(ended()).toBe(false);
    await pool.end();
    expect(ended()).toBe(true);
  });
});
