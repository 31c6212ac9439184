// Accounts: the drain with one account against the same backlog spread over 200 accounts, in the same run. The fair
// claim (migrations/018) reads each account's due events apart; this says what that costs a drain.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropSchemas } from '../lib/database.js';
import type { Section } from '../lib/report.js';
import { median, rounds, scaled, times, whole } from '../lib/stats.js';
import { type DrainHandlers, drainWithWorkers, payhooksSchema } from './drain.js';

const BACKLOG = scaled(30_000);
const MANY = 200;

/** The worker's configuration file with `count` accounts, each reading one shared secret from the environment. */
function accountsConfig(dir: string, ids: readonly string[]): DrainHandlers {
  const file = join(dir, 'payhooks.config.json');
  writeFileSync(file, JSON.stringify({ accounts: ids.map((id) => ({ id, secrets: { env: 'BENCH_ACCOUNT_SECRET' } })) }));
  return {
    module: 'bench/noop-handlers.mjs',
    env: { PAYHOOKS_CONFIG: file, BENCH_ACCOUNT_SECRET: 'whsec_bench_accounts_0123456789' },
  };
}

export async function benchAccounts(): Promise<Section> {
  const many = Array.from({ length: MANY }, (_, n) => `acct-${String(n).padStart(3, '0')}`);
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-bench-accounts-'));
  const variants = [
    { name: '1 account (the default account, no configuration)', accounts: undefined, handlers: undefined },
    { name: `${MANY} accounts, the events spread over them in turn`, accounts: many, handlers: accountsConfig(dir, many) },
  ];
  const rates = variants.map(() => [] as number[]);
  const schemas: string[] = [];
  try {
    for (let round = 0; round < rounds(); round++) {
      // Alternating within each round, each drain on a fresh schema.
      for (const [i, variant] of variants.entries()) {
        const schema = await payhooksSchema(0);
        schemas.push(schema);
        const { rate } = await drainWithWorkers(schema, `a${i}r${round}`, BACKLOG, 1, {
          handlers: variant.handlers,
          accounts: variant.accounts,
        });
        rates[i]!.push(rate);
        console.info(`  accounts round ${round + 1}, ${variant.name}: ${whole(rate)} events/s`);
        await dropSchemas([schema]);
      }
    }
  } finally {
    await dropSchemas(schemas);
    rmSync(dir, { recursive: true, force: true });
  }
  const base = median(rates[0]!);
  const rows = variants.map((variant, i) => [variant.name, whole(median(rates[i]!)), times(median(rates[i]!) / base)]);
  const spread = median(rates[1]!) / base;
  return {
    title: 'Accounts',
    about:
      `A backlog of ${whole(BACKLOG)} events stored as the receiver stores it, drained by one \`payhooks serve --role worker --handlers bench/noop-handlers.mjs\`, ` +
      `once as one account's and once spread over ${MANY} accounts in turn (configured in the worker's configuration file), ` +
      `warmed up as in Drain; events/s from the first outcome to the last, medians of ${rounds()} runs, the two alternating within each round, ` +
      'each on a fresh schema (docs/accounts.md#fairness).',
    header: ['backlog of', 'events/s', `ratio to 1 account`],
    rows,
    targets: [{ text: `${MANY} accounts drain at least 0.75x as fast as one (measured ${times(spread)})`, met: spread >= 0.75 }],
    notes: [
      `With ${MANY} accounts every claim reads each account with due work apart (one probe of the queue per account, then its share in queue order), where one account reads the queue once; the claim's cost grows with the accounts that have work, not with the backlog.`,
    ],
  };
}
