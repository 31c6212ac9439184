import { CompiledQuery, sql } from 'kysely';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { claimStatement } from '../../src/store/claim.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { vacuumQueue } from '../../src/store/maintenance.js';
import { putEvents } from '../helpers/inbox.js';
import { pgUrl } from '../helpers/pg.js';
import { withOwnResource } from '../helpers/own-resource.js';
import { backends, dispose } from '../helpers/stores.js';

interface PlanNode {
  'Node Type': string;
  'Actual Rows'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
}

async function storeMany(store: PayhooksDatabase, prefix: string, count: number): Promise<void> {
  for (let start = 0; start < count; start += 1000)
    await putEvents(
      store,
      Array.from({ length: Math.min(1000, count - start) }, (_, n) =>
        // Each of its own customer: events of one resource are claimed one at a time.
        withOwnResource(exampleEvent('CUSTOMER_UPDATED', { eventId: `${prefix}_${start + n}` }), `${prefix}_${start + n}`),
      ),
    );
}

/** The queue's statistics as the planner reads them. */
async function queueStats(store: PayhooksDatabase): Promise<{ relpages: number; reltuples: number }> {
  const { rows } = await sql<{ relpages: number; reltuples: number }>`
    select relpages, reltuples from pg_class where oid = ${`"${store.schema}".inbox_queue`}::regclass`.execute(store.db);
  return rows[0]!;
}

/** EXPLAIN (ANALYZE, BUFFERS) of a claim of `limit`; with `rollBack`, the claim's leases are undone afterwards. */
async function explainClaim(store: PayhooksDatabase, limit: number, { rollBack = false } = {}): Promise<PlanNode> {
  return store.db.connection().execute(async (conn) => {
    await sql`begin`.execute(conn);
    try {
      const compiled = claimStatement(store, { workerId: 'w', limit, leaseMs: 60_000 }).compile(conn);
      const explained = await conn.executeQuery<{ 'QUERY PLAN': [{ Plan: PlanNode }] | string }>(
        CompiledQuery.raw(`explain (analyze, buffers, format json) ${compiled.sql}`, [...compiled.parameters]),
      );
      const cell = explained.rows[0]!['QUERY PLAN'];
      return (typeof cell === 'string' ? (JSON.parse(cell) as [{ Plan: PlanNode }]) : cell)[0].Plan;
    } finally {
      await sql.raw(rollBack ? 'rollback' : 'commit').execute(conn);
    }
  });
}

/** The buffers a plan touched, in all. */
function buffers(plan: PlanNode): number {
  return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
}

describe.each(backends)('the claim’s plan under statistics taken at another size of the queue ($name)', (backend) => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  // The worker (or autovacuum) vacuums the queue when it happens to: a queue that drained, vacuumed empty or with a few
  // hundred events left, keeps statistics that count far fewer events than the next burst brings, in a file that kept
  // its pages. The planner then guessed the whole burst at one row, or at fewer rows than a claim asks for: it joined
  // the CTE of due events once per row leased (a claim of 1,000 took 160 ms against 20), or read and sorted the whole
  // queue, probing the resource index for every row, on every claim until the next analyze (a claim of 1,000 from
  // 20,000: 50 ms against 15). Both with issue 27; the claim is now a function whose plan cannot take either way
  // (migrations/015).
  it.skipIf(!backend.available).each([0, 150])(
    'vacuumed with %i events left: a claim reads about as much from a queue of 8,000 as from one of 2,000',
    { timeout: 60_000 },
    async (left) => {
      store = await backend.open();
      const queue = sql.id(store.schema, 'inbox_queue');
      await storeMany(store, 'evt_drained', 3000);
      await sql`delete from ${queue} where event_id not in (select event_id from ${queue} order by seq desc limit ${left})`.execute(
        store.db,
      );
      await vacuumQueue(store);
      await sql`delete from ${queue}`.execute(store.db);
      const stats = await queueStats(store);
      // The case at hand: statistics of the queue as it was, in the pages the vacuum kept.
      expect(stats.reltuples).toBe(left);
      expect(stats.relpages).toBeGreaterThan(0);

      await storeMany(store, 'evt_burst', 2000);
      const small = await explainClaim(store, 500, { rollBack: true });
      await storeMany(store, 'evt_more', 6000);
      const large = await explainClaim(store, 500, { rollBack: true });
      expect(small['Actual Rows']).toBe(500);
      expect(large['Actual Rows']).toBe(500);
      // Reading the whole queue costs about four times as much at 8,000 as at 2,000; a claim that stops at its 500
      // costs the same (the index one level deeper, at most).
      expect(buffers(large) / buffers(small)).toBeLessThan(1.5);
    },
  );
});

// PGlite has no JIT, and auto_explain is the server's: the real server only.
const postgres = backends[0]!;

describe.skipIf(!postgres.available)('the claim on a connection with JIT on (postgres)', () => {
  let store: PayhooksDatabase | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    store = undefined;
  });

  // The disabled plan nodes of migration 015 put the claim's estimated cost above every JIT threshold: on a connection
  // that had not turned JIT off itself (behind a pooler in transaction mode, say), each claim was compiled first
  // (about 860 ms for a claim of 500 that runs in 10). The function turns JIT off for its own statement (migration 017).
  it('plans the statement inside the function without JIT', { timeout: 60_000 }, async () => {
    store = await postgres.open();
    await storeMany(store, 'evt_jit', 600);
    // A connection of its own, as a pooler's server connection would be: JIT on (at every threshold), nothing set.
    const client = new pg.Client({ connectionString: pgUrl! });
    const plans: string[] = [];
    client.on('notice', (notice) => plans.push(notice.message ?? ''));
    await client.connect();
    try {
      await client.query('set jit = on; set jit_above_cost = 0');
      await client.query("load 'auto_explain'");
      await client.query(
        'set auto_explain.log_min_duration = 0; set auto_explain.log_nested_statements = on; set auto_explain.log_level = notice',
      );
      const claim = claimStatement(store, { workerId: 'w', limit: 500, leaseMs: 60_000 }).compile(store.db);
      await client.query('begin');
      const { rows } = await client.query(claim.sql, [...claim.parameters]);
      await client.query('rollback');
      expect(rows).toHaveLength(500);
    } finally {
      await client.end();
    }
    // The claim's own statement: the one that issues the claim's lease token (migrations/022; one account here, so the
    // single claim's), apart from the statement that chooses it.
    const inner = plans.filter((plan) => plan.includes("nextval('lease_tokens')"));
    expect(inner).toHaveLength(1);
    expect(inner[0]).toContain('LockRows');
    expect(inner[0]).not.toContain('JIT:');
  });
});
