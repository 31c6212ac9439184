import { mkdtempSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { run } from '../../src/cli/main.js';
import { createClient, type ApiClient } from '../../src/client/index.js';
import type { EventMap } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createSandboxClient, startSimulator } from '../../src/simulator/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { runBackfill } from '../../src/sync/backfill.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { customerFromEvent, STATE_RANK } from '../../src/sync/mirror/states.js';
import { writeMirrorState } from '../../src/sync/mirror/write.js';
import { collect, runCli, spawnCli } from '../helpers/cli.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';
import { seedDataDir } from '../helpers/pglite-template.js';

const silent = pino({ level: 'silent' });

interface JsonReport {
  matches: boolean;
  counts: Record<string, number>;
  requests: number;
  repaired: number | null;
  drift: { resource: string; id: string; kind: string; repaired: boolean; diff: { field: string; mirror: unknown; api: unknown }[] }[];
}

/** Runs `payhooks <args>` in this process with `env` set, collecting what it prints on stdout. */
async function runHere(args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string }> {
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  let stdout = '';
  try {
    const code = await run(args, (text) => (stdout += `${text}\n`));
    return { code, stdout };
  } finally {
    vi.unstubAllEnvs();
  }
}

afterEach(() => vi.unstubAllEnvs());

describe('payhooks verify: bad input', () => {
  // The refusals that only parse arguments are in test/cli/verify-arguments.test.ts (unit tier, in-process).
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-verify-'));
  const dataDir = join(dir, 'pgdata');
  const env = { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir, PAYHOOKS_API_KEY: 'sk_test_cli', PAYHOOKS_API_URL: 'http://127.0.0.1:9' };

  it('a database without a mirror: exit 1 saying so, no mirror made', { timeout: 60_000 }, async () => {
    // A database that exists (not this test's subject: its first start), so the run skips initdb and the migrations.
    seedDataDir(dataDir);
    const simulator = await startSimulator({ logger: silent });
    try {
      const result = await runHere(['verify'], { ...env, PAYHOOKS_API_URL: simulator.url, PAYHOOKS_MIRROR_SCHEMA: 'nowhere_mirror' });
      expect(result.code).toBe(1);
      const store = await openDatabase({ dataDir });
      const { rows } = await sql<{ found: string | null }>`select to_regclass('nowhere_mirror.customers')::text as found`.execute(store.db);
      await store.close();
      expect(rows[0]!.found).toBeNull();
    } finally {
      await simulator.close();
    }
  });
});

type Backend = { name: 'postgres' | 'pglite'; available: boolean };
const BACKENDS: Backend[] = [
  { name: 'postgres', available: pgUrl !== null },
  { name: 'pglite', available: true },
];

describe.each(BACKENDS)('payhooks verify after a day of traffic, on $name', (backend) => {
  it.skipIf(!backend.available)(
    'finds each injected drift with its diff (exit 3), --repair fixes them, a second verify exits 0',
    { timeout: 240_000 },
    async () => {
      const simulator = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
      const schema = uniqueSchema('verify');
      const mirrorSchema = `${schema}_mirror`;
      const dataDir = join(mkdtempSync(join(tmpdir(), 'payhooks-verify-day-')), 'pgdata');
      if (backend.name !== 'postgres') seedDataDir(dataDir);
      const open = () => openDatabase(backend.name === 'postgres' ? { url: pgUrl!, schema } : { dataDir, schema });
      let store: PayhooksDatabase | undefined = await open();
      let hooks: Payhooks<ApiClient> | undefined;
      // The receiver in front of payhooks: `drop` says which deliveries never reach it (answered 200 by the path
      // in between), `down` stands for serve not running (every delivery refused, as a stopped server would).
      let drop: (body: string) => boolean = () => false;
      let down = false;
      const receiver = await listen(
        createServer((req, res) => {
          const chunks: Buffer[] = [];
          req.on('data', (chunk: Buffer) => chunks.push(chunk));
          req.on('end', () => {
            const body = Buffer.concat(chunks).toString();
            if (down) {
              res.writeHead(503).end();
              return;
            }
            if (drop(body)) {
              res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
              return;
            }
            // The body was read here: payhooks gets it through its framework-free receiver.
            void hooks!
              .receive({ method: req.method ?? 'POST', headers: req.headers, rawBody: Buffer.concat(chunks) })
              .then((answer) => res.writeHead(answer.status, answer.headers).end(answer.body))
              .catch(() => res.writeHead(500).end());
          });
        }),
      );
      const apiKey = 'sk_test_verify';
      const env = {
        ...(backend.name === 'postgres' ? { DATABASE_URL: pgUrl! } : { DATABASE_URL: '', PAYHOOKS_DATA_DIR: dataDir }),
        PAYHOOKS_SCHEMA: schema,
        PAYHOOKS_MIRROR_SCHEMA: mirrorSchema,
        PAYHOOKS_API_KEY: apiKey,
        PAYHOOKS_API_URL: simulator.url,
        PAYHOOKS_LOG_LEVEL: 'silent',
      };
      try {
        const client = createClient({ apiKey, environment: simulator.url, rateLimit: false });
        const sandbox = createSandboxClient({ baseUrl: simulator.url, apiKey });
        const endpoint = await client.webhooks.create({
          url: `${receiver.url}/webhooks`,
          description: 'verify',
          enabledEvents: [
            'CUSTOMER_CREATED',
            'CUSTOMER_UPDATED',
            'INVOICE_CREATED',
            'INVOICE_CANCELED',
            'INVOICE_PAID',
            'INVOICE_PAID_OTHER',
            'PAYMENT_COMPLETED',
          ],
        });
        const { secret } = await client.webhooks.getSecret(endpoint.id);
        hooks = createPayhooks({ secret, database: store, logger: silent, api: client, worker: { pollIntervalMs: 50, concurrency: 8 } });
        await registerMirror(hooks, { schema: mirrorSchema });
        await hooks.start();

        // The day: 20 customers, 40 invoices, 15 paid through the service, 5 marked paid.
        const customers: string[] = [];
        for (let i = 0; i < 20; i++) {
          customers.push((await client.customers.create({ username: `v${i}`, name: `Customer ${i}`, email: `v${i}@example.com` })).id);
        }
        const invoices: string[] = [];
        for (let i = 0; i < 40; i++) {
          const invoice = await client.invoices.create({
            customerId: customers[i % 20]!,
            dueDate: '2026-12-01T06:00:00Z',
            items: [{ quantity: 1 + (i % 2), concept: { displayName: `Concept ${i}`, amount: 10_000 + i, currency: 'MXN' } }],
          });
          invoices.push(invoice.id);
        }
        for (const invoiceId of invoices.slice(0, 15)) {
          const { payment } = await client.invoices.requestPayment(invoiceId, { paymentType: 'CASH' });
          await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });
        }
        for (const invoiceId of invoices.slice(15, 20)) await client.invoices.markPaid(invoiceId);
        const allDone = async () => {
          await simulator.idle();
          const { rows } = await sql<{ unfinished: number; stored: number }>`
            select count(*)::int as stored, count(*) filter (where status <> 'done')::int as unfinished
            from ${sql.id(schema, 'inbox_event_states')}`.execute(store!.db.withoutPlugins());
          return rows[0]!.unfinished === 0 && rows[0]!.stored > 0;
        };
        await waitFor(allDone, 'every delivered event mirrored', 60_000);

        // 1. A mirror row deleted.
        const deleted = invoices[25]!;
        await sql`delete from ${sql.id(mirrorSchema, 'invoices')} where id = ${deleted}`.execute(store.db.withoutPlugins());
        // 2. A row made stale: an older content, written before the record's last change.
        const staled = customers[1]!;
        await sql`update ${sql.id(mirrorSchema, 'customers')}
          set name = 'Old name', synced_at = created_at - interval '1 minute' where id = ${staled}`.execute(store.db.withoutPlugins());
        // 3. An event the receiver never got: the invoice is paid, its deliveries lost on the way.
        const lost = invoices[30]!;
        drop = (body) => body.includes(lost);
        await client.invoices.markPaid(lost);
        await simulator.idle();
        // 4. Two updates of one customer in the same second, delivered in reverse order: the first update's
        // snapshot arrives last. A mirror fed by snapshots (no current-state read) keeps it: that row is written here.
        const twice = customers[2]!;
        drop = (body) => body.includes(twice);
        await sandbox.updateCustomer(twice, { name: 'First rename' });
        await sandbox.updateCustomer(twice, { name: 'Second rename' });
        await simulator.idle();
        const updates = simulator.events().filter((e) => e.eventType === 'CUSTOMER_UPDATED' && (e.data as { id: string }).id === twice);
        expect(updates).toHaveLength(2);
        const [first, second] = updates as { eventId: string; data: EventMap['CUSTOMER_UPDATED'] }[];
        await store.db.transaction().execute(async (trx) => {
          await sql`delete from ${sql.id(mirrorSchema, 'customers')} where id = ${twice}`.execute(trx);
          const cause = (e: typeof first) => ({ eventId: e!.eventId, eventType: 'CUSTOMER_UPDATED' });
          await writeMirrorState(trx, mirrorSchema, 'default', customerFromEvent(second!.data, STATE_RANK.changed, false), cause(second));
          // The same rank and no time of its own: the later-delivered snapshot replaces the other when its hash is not lower.
          await sql`update ${sql.id(mirrorSchema, 'customers')} set state_hash = '' where id = ${twice}`.execute(trx);
          await writeMirrorState(trx, mirrorSchema, 'default', customerFromEvent(first!.data, STATE_RANK.changed, false), cause(first));
        });
        drop = () => false;
        // 5. An invoice canceled while serve was down.
        const canceled = invoices[35]!;
        down = true;
        await hooks.stop();
        hooks = undefined;
        await sandbox.cancelInvoice(canceled);
        await simulator.idle();
        await store.close();
        store = undefined;

        // verify, as a user runs it: a process, one JSON document on stdout, exit 3.
        const found = await runCli(['verify', '--json'], env, undefined, 120_000);
        expect(found.stderr).toBe('');
        expect(found.code).toBe(3);
        const report = JSON.parse(found.stdout) as JsonReport;
        expect(report.matches).toBe(false);
        const byId = new Map(report.drift.map((d) => [d.id, d]));
        expect(byId.get(deleted)).toMatchObject({ resource: 'invoices', kind: 'missing' });
        expect(byId.get(staled)).toMatchObject({
          resource: 'customers',
          kind: 'stale',
          diff: [{ field: 'name', mirror: 'Old name', api: 'Customer 1' }],
        });
        expect(byId.get(lost)).toMatchObject({ resource: 'invoices', kind: 'stale' });
        expect(byId.get(lost)!.diff).toEqual(
          expect.arrayContaining([
            { field: 'status', mirror: 'open', api: 'paid' },
            { field: 'is_paid', mirror: false, api: true },
          ]),
        );
        expect(byId.get(twice)).toMatchObject({ resource: 'customers', kind: 'different' });
        expect(byId.get(twice)!.diff).toContainEqual({ field: 'name', mirror: 'First rename', api: 'Second rename' });
        expect(byId.get(canceled)).toMatchObject({ resource: 'invoices', kind: 'stale' });
        expect(byId.get(canceled)!.diff).toContainEqual({ field: 'status', mirror: 'open', api: 'canceled' });
        // Nothing else drifted: every other row of the day matches.
        expect([...byId.keys()].sort()).toEqual([deleted, staled, lost, twice, canceled].sort());

        // The same in text: each drifted record named with its diff, personal data masked.
        const text = await runHere(['verify', '--resource', 'customers'], env);
        if (process.env.SHOW_VERIFY) console.info(found.stdout, text.stdout);
        expect(text.code).toBe(3);
        expect(text.stdout).toContain(`stale customers ${staled}`);
        expect(text.stdout).toContain('name: mirror "Old name", service "Customer 1"');
        expect(text.stdout).toContain(`different customers ${twice}`);
        expect(text.stdout).not.toMatch(/v\d+@example\.com/);

        const repaired = await runHere(['verify', '--repair', '--json'], env);
        expect(repaired.code).toBe(3);
        const repairReport = JSON.parse(repaired.stdout) as JsonReport;
        expect(repairReport.repaired).toBe(5);
        expect(repairReport.drift.every((d) => d.repaired)).toBe(true);

        const again = await runHere(['verify'], env);
        expect(again.stdout).toMatch(/the mirror \S+ matches the service/);
        expect(again.code).toBe(0);
      } finally {
        await hooks?.stop();
        await receiver.close();
        await simulator.close();
        store ??= await open();
        if (backend.name === 'postgres') {
          await sql.raw(`drop schema if exists "${schema}" cascade; drop schema if exists "${mirrorSchema}" cascade`).execute(store.db);
        }
        await store.close();
      }
    },
  );
});

describe.skipIf(pgUrl === null)('payhooks verify stopped by SIGINT', () => {
  it('stops after the step being recorded, exit 1 saying how to resume; the next run resumes there and finishes', {
    timeout: 180_000,
  }, async () => {
    const simulator = await startSimulator({ logger: silent, rateLimitPerMinute: 1_000_000 });
    // Each list request held a while, so that the run is still going when the signal comes; not once it came (the
    // resumed run has nothing to be interrupted in).
    let holdMs = 300;
    const proxy = createServer((req, res) => {
      setTimeout(() => {
        const upstream = request(`${simulator.url}${req.url}`, { method: req.method, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        upstream.on('error', () => res.destroy());
        req.pipe(upstream);
      }, holdMs);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const schema = uniqueSchema('verify_sig');
    const mirrorSchema = `${schema}_mirror`;
    const store = await openDatabase({ url: pgUrl!, schema });
    try {
      const api = createClient({ apiKey: 'sk_test_sig', environment: simulator.url, rateLimit: false });
      for (let first = 0; first < 1000; first += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, i) => api.customers.create({ username: `sig${first + i}` })));
      }
      await migrate(store);
      await runBackfill({ store, api, mirrorSchema, resources: ['customers'] });
      const env = {
        DATABASE_URL: pgUrl!,
        PAYHOOKS_SCHEMA: schema,
        PAYHOOKS_MIRROR_SCHEMA: mirrorSchema,
        PAYHOOKS_API_KEY: 'sk_test_sig',
        PAYHOOKS_API_URL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
        PAYHOOKS_LOG_LEVEL: 'silent',
      };
      const child = spawnCli(['verify', '--resource', 'customers'], env);
      const stopped = collect(child, 120_000);
      // Plain progress lines on a pipe: the first one says a page was recorded.
      await new Promise<void>((resolve) => {
        child.stderr?.on('data', (chunk: Buffer) => {
          if (/verified \d+\/1000 customers/.test(chunk.toString())) resolve();
        });
      });
      child.kill('SIGINT');
      const first = await stopped;
      holdMs = 0;
      expect(first.code).toBe(1);
      expect(first.stderr).toContain('SIGINT: stopping after the step being recorded');
      expect(first.stderr).toContain('run payhooks verify again to resume there');
      const { rows } = await sql<{ next_skip: number }>`select next_skip from ${sql.id(mirrorSchema, 'verify_cursors')}`.execute(store.db);
      const at = rows[0]!.next_skip;
      expect(at).toBeGreaterThan(0);
      expect(at).toBeLessThan(1000);

      const second = await runCli(['verify', '--resource', 'customers'], env, undefined, 120_000);
      expect(second.stderr).toContain(`customers: resuming at record ${at.toLocaleString('en-US')}`);
      expect(second.code).toBe(0);
      expect(second.stdout).toContain(`customers (resumed): ${(1000 - at).toLocaleString('en-US')} checked, all match`);
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
      await simulator.close();
      await sql.raw(`drop schema if exists "${schema}" cascade; drop schema if exists "${mirrorSchema}" cascade`).execute(store.db);
      await store.close();
    }
  });
});
