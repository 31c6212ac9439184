import { type ChildProcess, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { runCli } from '../helpers/cli.js';
import { freePort } from '../helpers/servers.js';
import { repoRoot, startExample } from '../helpers/examples.js';
import { waitFor } from '../helpers/wait.js';

// The example as a user runs it: start.ts through tsx, in a folder of its own (the session file and the embedded
// database land there), with tsconfig's `paths` so that its `payhooks` imports are the sources. The simulator and
// serve it starts are the built CLI (bin/payhooks.js), as `npx payhooks` runs them.
const ERP_SECRET = 'erp_standalone_sync_test_secret';
const FLOW = ['CUSTOMER_CREATED', 'INVOICE_CREATED', 'PAYMENT_ATTEMPT_SUCCEEDED', 'INVOICE_PAID', 'PAYMENT_COMPLETED'];

/** Three different free ports. */
async function freePorts(): Promise<[number, number, number]> {
  const ports = new Set<number>();
  while (ports.size < 3) ports.add(await freePort());
  return [...ports] as [number, number, number];
}

/** Kills start.ts and the serve and simulator it started (in process groups of their own, so not by its group). */
function killTree(child: ChildProcess): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try {
    const pids = execFileSync('ps', ['-o', 'pid=', '--ppid', String(child.pid)], { encoding: 'utf8' })
      .split(/\s+/)
      .filter(Boolean);
    for (const pid of pids) process.kill(Number(pid), 'SIGKILL');
  } catch {
    // no children left, or no ps
  }
  child.kill('SIGKILL');
}

describe('examples/standalone-sync', () => {
  it('start.ts runs the simulator, serve (mirror + HTTP forward) and the ERP inbox: a cash payment ends in mirror rows and two verified documents', {
    timeout: 150_000,
  }, async () => {
    expect(existsSync(join(repoRoot, 'dist/cli/main.js')), 'start.ts runs the built CLI: run npm run build').toBe(true);
    const dir = await mkdtemp(join(tmpdir(), 'payhooks-standalone-sync-'));
    const [servePort, simulatorPort, erpPort] = await freePorts();
    const example = startExample('standalone-sync/start.ts', [], {
      cwd: dir,
      env: {
        PORT: String(servePort),
        SIMULATOR_PORT: String(simulatorPort),
        ERP_INBOX_PORT: String(erpPort),
        ERP_FORWARD_SECRET: ERP_SECRET,
        // Left in a shell by other work: start.ts must not let them override the simulator's session.
        PAYHOOKS_WEBHOOK_SECRET: 'whsec_from_another_project',
        PAYHOOKS_API_URL: 'http://127.0.0.1:9/elsewhere',
        PAYHOOKS_DATA_DIR: '',
        PAYHOOKS_LOG_LEVEL: 'info',
      },
    });
    const { child, exited, running } = example;
    let invoiceId: string;
    let events: [string, string][];
    try {
      await waitFor(
        () => {
          if (!running()) throw new Error(`start.ts exited early:\n${example.output()}`);
          return example.output().includes('Ready:');
        },
        'the example ready',
        90_000,
      );
      expect(example.output()).toContain(
        `running: the Postgres mirror in schema payhooks_mirror (current state read from the API), HTTP forward erp`,
      );

      // "In another terminal of this folder": trigger finds the simulator through the session file start.ts made.
      const trigger = await runCli(['trigger', 'cash-payment'], { PAYHOOKS_API_URL: undefined, PAYHOOKS_API_KEY: undefined }, dir);
      expect(trigger.code, trigger.stderr).toBe(0);
      invoiceId = /invoice (inv_[\w-]+) paid/.exec(trigger.stdout)![1]!;
      events = [...trigger.stdout.matchAll(/^ {2}([A-Z_]+) +(evt_[\w-]+)$/gm)].map((m) => [m[1]!, m[2]!]);
      expect(events.map(([type]) => type)).toEqual(FLOW);

      await waitFor(
        () => events.every(([type, id]) => example.output().includes(`[serve] done ${type} ${id}`)),
        'serve done with the five events',
        45_000,
      );
      const paid = events.find(([type]) => type === 'INVOICE_PAID')![1];
      const completed = events.find(([type]) => type === 'PAYMENT_COMPLETED')![1];
      await waitFor(
        () => example.output().includes(`[erp-inbox] PAYMENT_COMPLETED ${completed}`),
        'the ERP inbox verified PAYMENT_COMPLETED',
        30_000,
      );
      expect(example.output()).toMatch(
        new RegExp(
          `\\[erp-inbox\\] INVOICE_PAID ${paid} verified \\(forward:erp\\): invoice ${invoiceId} paid 2500\\.00 MXN \\(state from the api\\)`,
        ),
      );
      // Only the types the erp target asked for reach it.
      expect(example.output().match(/^\[erp-inbox\] /gm)).toHaveLength(2);

      child.kill('SIGINT');
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 60_000))]);
    } finally {
      killTree(child);
    }
    expect(await exited, example.output()).toBe(0);
    // On the way out it printed the mirror's rows; the simulator removed its session file.
    expect(example.output()).toMatch(new RegExp(`id=${invoiceId} +customer_id=cus_[\\w-]+ +status=paid +amount=250000 +currency=MXN`));
    expect(existsSync(join(dir, '.payhooks', 'simulator.json'))).toBe(false);
    expect(example.output()).not.toContain(ERP_SECRET);

    // The embedded database serve wrote, opened now that nothing holds it.
    const store = await openDatabase({ dataDir: join(dir, '.payhooks', 'pgdata') });
    try {
      const db = store.db.withoutPlugins();
      const { rows: invoices } = await sql<{ status: string; is_paid: boolean; source: string }>`
        select status, is_paid, source from payhooks_mirror.invoices where id = ${invoiceId}`.execute(db);
      expect(invoices).toEqual([{ status: 'paid', is_paid: true, source: 'api' }]);
      const { rows: payments } = await sql<{ type: string; status: string }>`
        select type, status from payhooks_mirror.payments where invoice_id = ${invoiceId}`.execute(db);
      expect(payments).toEqual([{ type: 'CASH', status: 'SUCCEEDED' }]);
      const { rows: customers } = await sql<{ n: number }>`select count(*)::int as n from payhooks_mirror.customers`.execute(db);
      expect(customers[0]?.n).toBe(1);
      for (const [type, eventId] of events) {
        const stored = await getEvent(store, eventId);
        expect(stored?.status, type).toBe('done');
        const forwarded = type === 'INVOICE_PAID' || type === 'PAYMENT_COMPLETED';
        expect(stored?.completedHandlers.sort(), type).toEqual(forwarded ? ['forward:erp', 'mirror'] : ['mirror']);
      }
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
