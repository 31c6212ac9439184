// The standalone sync service on a laptop, in one command: the simulator of the Payment Collection Service,
// `payhooks serve` with payhooks.config.mjs (the Postgres mirror and an HTTP forward to an ERP), and the ERP's
// inbound endpoint, itself a payhooks that verifies what serve forwards. Run from your project's root (here: the
// repository's), then `npx payhooks trigger cash-payment` in another terminal of the same folder.
//
//   npx tsx examples/standalone-sync/start.ts
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Kysely } from 'kysely';
import { type ForwardDocument, openDatabase } from 'payhooks';
import { startErpInbox } from './erp-inbox.js';

const here = dirname(fileURLToPath(import.meta.url));
const configFile = join(here, 'payhooks.config.mjs');
// The installed CLI, as `npx payhooks` runs it (in the payhooks repository: its own bin/, which runs dist/).
const cli = join(dirname(createRequire(import.meta.url).resolve('payhooks/package.json')), 'bin', 'payhooks.js');
// Where `payhooks simulate --forward-to` leaves its address, key and secret for serve and trigger.
const sessionFile = join('.payhooks', 'simulator.json');

function portFrom(name: string, fallback: number): number {
  const value = process.env[name];
  if (!value) return fallback;
  const port = Number(value);
  // No 0 here: the simulator is told serve's URL before serve starts.
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    console.error(`start: ${name} must be a port from 1 to 65535, not ${JSON.stringify(value)}`);
    process.exit(1);
  }
  return port;
}
const servePort = portFrom('PORT', 8787);
const simulatorPort = portFrom('SIMULATOR_PORT', 4010);
const erpPort = portFrom('ERP_INBOX_PORT', 8788);
const webhookUrl = `http://127.0.0.1:${servePort}/webhooks`;
const databaseUrl = process.env.DATABASE_URL || undefined;
const dataDir = process.env.PAYHOOKS_DATA_DIR || join('.payhooks', 'pgdata');
const mirrorSchema = process.env.PAYHOOKS_MIRROR_SCHEMA || 'payhooks_mirror';
// Shared by serve (which signs with it) and the ERP inbox (which verifies with it); made up when not given.
const erpSecret = process.env.ERP_FORWARD_SECRET || `erp_${randomBytes(24).toString('base64url')}`;

const children: ChildProcess[] = [];
let stopping = false;
let closeErp: (() => Promise<void>) | undefined;

/** A pino line of a child, or undefined for other text. */
function logEntry(line: string): Record<string, unknown> | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    return JSON.parse(line) as Record<string, unknown>;
  } catch {
    return undefined;
  }
}

/**
 * Starts `payhooks <args>` in this folder. Its lines go through `show`, which returns what to print (or nothing);
 * all of them are kept, to print if it stops on its own.
 */
function payhooks(name: string, args: string[], env: NodeJS.ProcessEnv, show: (line: string) => string | undefined) {
  // Its own process group: a Ctrl-C reaches this script alone, which stops serve before the simulator.
  const child = spawn(process.execPath, [cli, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.push(child);
  const output: string[] = [];
  const lines = (stream: NodeJS.ReadableStream, err: boolean) =>
    createInterface({ input: stream }).on('line', (line) => {
      output.push(line);
      const shown = err ? line : show(line);
      if (shown !== undefined) console.log(`[${name}] ${shown}`);
    });
  lines(child.stdout!, false);
  lines(child.stderr!, true);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then((code) => {
    if (stopping) return;
    console.error(`\n${name} stopped on its own (exit code ${code}); its output:\n${output.join('\n')}`);
    void shutdown(1);
  });
  return { child, exited };
}

/** What the info-level logs of serve say that is worth a line here; warnings and errors always. */
function serveLine(line: string): string | undefined {
  const entry = logEntry(line);
  if (!entry) return line;
  const msg = String(entry.msg);
  if (Number(entry.level) >= 40) return `${Number(entry.level) >= 50 ? 'error' : 'warn'}: ${msg}`;
  if (msg === 'event processed') return `done ${entry.eventType} ${entry.eventId}`;
  if (/^(running: |using the simulator session)/.test(msg)) return msg;
  return undefined;
}

function describe(document: ForwardDocument): string {
  const resource = document.resource;
  if (!resource) return 'no resource';
  const state = resource.state;
  const status = typeof state.status === 'string' ? state.status : state.isPaid === true ? 'paid' : undefined;
  const amount =
    typeof state.amount === 'number' && typeof state.currency === 'string'
      ? `${(state.amount / 100).toFixed(2)} ${state.currency}`
      : undefined;
  return [`${resource.kind} ${resource.id}`, status, amount, `(state from the ${resource.source})`].filter(Boolean).join(' ');
}

async function waitFor(what: string, check: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    // A piece stopped on its own and shutdown() is under way: go no further, it ends the process.
    if (stopping) return new Promise<never>(() => {});
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 40_000);
  await exited;
  clearTimeout(timer);
}

async function shutdown(code: number): Promise<never> {
  if (stopping) return new Promise<never>(() => {});
  stopping = true;
  console.log('\nstopping serve, the simulator and the ERP inbox…');
  // serve first, so that nothing it still forwards meets a closed inbox; the simulator then removes its session file.
  for (const child of [...children].reverse()) await stopChild(child);
  await closeErp?.();
  if (code === 0) await printMirror();
  process.exit(code);
}

/** The mirror's newest rows; on the embedded database only readable now that serve, its one user, has stopped. */
async function printMirror(): Promise<void> {
  interface Row {
    id: string;
    created_at: Date | null;
    synced_at: Date;
    [column: string]: unknown;
  }
  type MirrorTables = Record<'customers' | 'invoices' | 'payments', Row>;
  const store = await openDatabase(databaseUrl ? { url: databaseUrl } : { dataDir });
  try {
    const db = store.db.withoutPlugins().withSchema(mirrorSchema) as unknown as Kysely<MirrorTables>;
    const where = databaseUrl ? 'the PostgreSQL database of DATABASE_URL' : `the embedded database in ${dataDir}`;
    console.log(`\nThe mirror (schema ${mirrorSchema} of ${where}), newest first:`);
    const show: Record<keyof MirrorTables, string[]> = {
      customers: ['id', 'username', 'archived'],
      invoices: ['id', 'customer_id', 'status', 'amount', 'currency', 'paid_at'],
      payments: ['id', 'invoice_id', 'type', 'status', 'amount', 'currency'],
    };
    for (const [table, columns] of Object.entries(show) as [keyof MirrorTables, string[]][]) {
      const rows = await db.selectFrom(table).selectAll().orderBy('synced_at', 'desc').limit(5).execute();
      console.log(`  ${table}:${rows.length ? '' : ' none'}`);
      for (const row of rows) {
        const cells = columns.map((column) => {
          const value = row[column];
          return `${column}=${value instanceof Date ? value.toISOString() : String(value)}`;
        });
        console.log(`    ${cells.join('  ')}`);
      }
    }
  } catch (err) {
    console.log(`\nThe mirror could not be read: ${(err as Error).message}`);
  } finally {
    await store.close();
  }
}

process.once('SIGINT', () => void shutdown(0));
process.once('SIGTERM', () => void shutdown(0));
// Whatever ends this process, its children end with it.
process.once('exit', () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

try {
  const erp = await startErpInbox({
    secret: erpSecret,
    port: erpPort,
    onDocument: (document) =>
      console.log(`[erp-inbox] ${document.eventType} ${document.eventId} verified (${document.payhooks.sink}): ${describe(document)}`),
  });
  closeErp = erp.close;

  // What the simulator's session gives serve must not be overridden by a secret or API left in this shell.
  const { PAYHOOKS_WEBHOOK_SECRET: _secret, PAYHOOKS_API_KEY: _key, PAYHOOKS_API_URL: _url, ...env } = process.env;

  const simulator = payhooks(
    'simulator',
    ['simulate', '--port', String(simulatorPort), '--forward-to', webhookUrl],
    env,
    // Its how-to says to start serve, which this script does; only problems are worth showing.
    (line) => {
      const entry = logEntry(line);
      return entry && Number(entry.level) >= 40 ? String(entry.msg) : undefined;
    },
  );
  await waitFor('the simulator session', () => {
    try {
      return (JSON.parse(readFileSync(sessionFile, 'utf8')) as { pid?: number }).pid === simulator.child.pid;
    } catch {
      return false;
    }
  });

  let receiving = false;
  payhooks(
    'serve',
    ['serve'],
    {
      ...env,
      PORT: String(servePort),
      HOST: '127.0.0.1',
      PAYHOOKS_CONFIG: configFile,
      ERP_FORWARD_SECRET: erpSecret,
      ERP_INBOX_URL: erp.url,
    },
    (line) => {
      if (logEntry(line)?.msg === 'payhooks is receiving webhooks') receiving = true;
      return serveLine(line);
    },
  );
  await waitFor('serve receiving webhooks', () => receiving);

  console.log(`
Ready:
  simulator  http://127.0.0.1:${simulatorPort}, delivering to ${webhookUrl} (session in ${sessionFile})
  serve      ${webhookUrl}: the mirror in schema ${mirrorSchema} of ${databaseUrl ? 'DATABASE_URL' : `the embedded database in ${dataDir}`}, forward erp
  ERP inbox  ${erp.url}: a payhooks verifying the forwarded documents with the erp target's secret

In another terminal of this folder:
  npx payhooks trigger cash-payment      (payhooks trigger --help lists the other flows)

Each event serve finishes shows here as [serve] done, each verified document as [erp-inbox].
Ctrl-C stops all three, then prints the mirror's rows.
`);
} catch (err) {
  console.error(`start: ${(err as Error).message}`);
  await shutdown(1);
}
