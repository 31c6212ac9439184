// A real PostgreSQL HA pair for the failover tests: pg_auto_failover (Debian's postgresql-15-auto-failover) with a
// monitor and two nodes in synchronous replication, each in its own data directory under one temporary folder, on
// loopback ports of their own. Never the shared server at 127.0.0.1:5432.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { isRunning, processesWorkingIn } from './processes.js';
import { waitFor } from './wait.js';

/** SIGKILLs a process (a negative pid: its group), which may be gone already. */
function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** waitFor at a slower pace: each check here opens a connection to the monitor. */
const waitSlowly = (check: () => Promise<boolean>, what: string, timeoutMs: number) =>
  waitFor(
    async () => {
      if (await check()) return true;
      await new Promise((resolve) => setTimeout(resolve, 250));
      return false;
    },
    what,
    timeoutMs,
  );

const PG_BIN = '/usr/lib/postgresql/15/bin';
const PG_AUTOCTL = '/usr/bin/pg_autoctl';

/** Why the HA pair cannot run here, or undefined when it can. */
export function haPairUnavailable(): string | undefined {
  if (!existsSync(PG_AUTOCTL)) return 'pg_autoctl is missing: apt-get install postgresql-15-auto-failover (.ci/run does)';
  if (!existsSync(join(PG_BIN, 'postgres'))) return `PostgreSQL 15's binaries are missing from ${PG_BIN}`;
  if (process.getuid?.() === 0 && !existsSync('/usr/sbin/runuser'))
    return 'running as root without runuser to start PostgreSQL as postgres';
  return undefined;
}

/** One data node of the pair. */
export interface HaNode {
  name: 'node1' | 'node2';
  port: number;
  pgdata: string;
}

/** A monitor and two nodes; `stop()` kills them all and removes the folder. */
export interface HaPair {
  readonly nodes: readonly [HaNode, HaNode];
  /** `postgres://postgres@127.0.0.1:p1,127.0.0.1:p2/payhooks?target_session_attrs=read-write`. */
  readonly url: string;
  /** The node the monitor says is primary (assigned and reported), waiting until there is one. */
  primary(timeoutMs?: number): Promise<HaNode>;
  /** Waits until one node is primary and the other a secondary in sync again. */
  settled(timeoutMs?: number): Promise<void>;
  /** SIGKILLs the node's pg_autoctl and its postmaster (the whole process group: as if the host died). */
  kill(node: HaNode): void;
  /** Starts a killed node's pg_autoctl again: it rejoins as a standby. */
  restart(node: HaNode): void;
  /** `pg_autoctl perform switchover`: the primary hands over to the secondary; resolves when the command returns. */
  switchover(): Promise<void>;
  /** The monitor's events, for a failure's message. */
  events(): Promise<string[]>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Runs PostgreSQL's tools as `postgres` when the tests run as root (PostgreSQL refuses to run as root). */
function asPostgres(dir: string, args: readonly string[]): [string, string[]] {
  const env = [
    `PATH=${PG_BIN}:/usr/bin:/bin`,
    `XDG_CONFIG_HOME=${join(dir, 'xdg-config')}`,
    `XDG_DATA_HOME=${join(dir, 'xdg-data')}`,
    `XDG_RUNTIME_DIR=${join(dir, 'xdg-run')}`,
    `HOME=${dir}`,
  ];
  if (process.getuid?.() === 0) return ['/usr/sbin/runuser', ['-u', 'postgres', '--', '/usr/bin/env', ...env, ...args]];
  return ['/usr/bin/env', [...env, ...args]];
}

/**
 * Starts the monitor, tunes its health checks to seconds (the defaults take 20 to 30 s to fail over), then the two
 * nodes; resolves once node1 is primary and node2 its synchronous secondary (about 40 s here).
 */
export async function startHaPair(): Promise<HaPair> {
  const dir = mkdtempSync(join(tmpdir(), 'payhooks-ha-'));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(dir, uid, gid);
  }
  const [monitorPort, port1, port2] = [await freePort(), await freePort(), await freePort()];
  const monitorData = join(dir, 'monitor');
  const nodes: [HaNode, HaNode] = [
    { name: 'node1', port: port1, pgdata: join(dir, 'node1') },
    { name: 'node2', port: port2, pgdata: join(dir, 'node2') },
  ];
  const children = new Map<string, ChildProcess>();
  const logOf = (name: string) => join(dir, `${name}.log`);
  const run = (name: string, args: readonly string[]) => {
    const [command, argv] = asPostgres(dir, args);
    const log = openSync(logOf(name), 'a');
    // Its own process group, so that kill() takes pg_autoctl and the postmaster it started together.
    const child = spawn(command, argv, { cwd: dir, detached: true, stdio: ['ignore', log, log] });
    child.on('error', () => undefined);
    children.set(name, child);
    return child;
  };
  const runToEnd = (args: readonly string[]) => {
    const [command, argv] = asPostgres(dir, args);
    return new Promise<string>((resolve, reject) => {
      const child = spawn(command, argv, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args.join(' ')} exited ${code}: ${out.slice(-2000)}`))));
    });
  };
  const monitorQuery = async <R extends pg.QueryResultRow>(text: string): Promise<R[]> => {
    const client = new pg.Client({ host: '127.0.0.1', port: monitorPort, user: 'autoctl_node', database: 'pg_auto_failover' });
    client.on('error', () => undefined);
    await client.connect();
    try {
      return (await client.query<R>(text)).rows;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const states = () =>
    monitorQuery<{ nodename: string; reportedstate: string; goalstate: string }>(
      'select nodename, reportedstate, goalstate from pgautofailover.node order by nodeid',
    ).catch(() => []);
  const common = ['--hostname', '127.0.0.1', '--listen', '127.0.0.1', '--auth', 'trust', '--no-ssl'];

  const killAll = () => {
    for (const child of children.values()) {
      if (child.pid !== undefined && child.exitCode === null) killQuietly(-child.pid);
    }
  };
  // The children are detached (their own process groups): a test process that dies must not leave them running.
  process.once('exit', killAll);
  const stop = async () => {
    process.removeListener('exit', killAll);
    killAll();
    // The postmasters are in their pg_autoctl's group; one that outlived it (none should) is stopped by its pid file.
    const postmasters: number[] = [];
    for (const pgdata of [monitorData, ...nodes.map((n) => n.pgdata)]) {
      const pidFile = join(pgdata, 'postmaster.pid');
      if (!existsSync(pidFile)) continue;
      const pid = Number(readFileSync(pidFile, 'utf8').split('\n')[0]);
      if (!Number.isInteger(pid) || pid <= 0) continue;
      postmasters.push(pid);
      killQuietly(pid);
    }
    // A SIGKILL is delivered, not waited for: a postmaster or backend still exiting writes into its data directory,
    // and removing the folder under it fails with ENOTEMPTY (CI saw it). A postmaster's children outlive it until they
    // notice (a checkpointer in the middle of a checkpoint writes on: CI saw ENOTEMPTY in monitor/base after every
    // postmaster was gone), so every process working in the folder is killed too. Wait until all are gone, then
    // remove with retries for the last writes.
    await waitFor(
      async () => {
        const running = [...children.values()].some(
          (child) => child.pid !== undefined && child.exitCode === null && child.signalCode === null,
        );
        const working = processesWorkingIn(dir);
        for (const pid of working) killQuietly(pid);
        if (!running && !postmasters.some(isRunning) && working.length === 0) return true;
        await new Promise((resolve) => setTimeout(resolve, 100));
        return false;
      },
      'the HA processes to exit',
      15_000,
    ).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  };

  try {
    await runToEnd(['pg_autoctl', 'create', 'monitor', '--pgdata', monitorData, '--pgport', String(monitorPort), ...common]);
    run('monitor', ['pg_autoctl', 'run', '--pgdata', monitorData]);
    await waitSlowly(async () => (await monitorQuery('select 1').catch(() => [])).length === 1, 'the monitor to answer', 30_000);
    // Seconds instead of the defaults' 20-30 s: the test waits for the failover under load.
    const tuning = [
      'health_check_period = 1000',
      'health_check_timeout = 1000',
      'health_check_retry_delay = 500',
      'health_check_max_retries = 1',
      'node_considered_unhealthy_timeout = 3000',
      'primary_demote_timeout = 3000',
    ];
    const admin = new pg.Client({ host: '127.0.0.1', port: monitorPort, user: 'postgres', database: 'pg_auto_failover' });
    await admin.connect();
    for (const setting of tuning) await admin.query(`alter system set pgautofailover.${setting}`);
    await admin.query('select pg_reload_conf()');
    await admin.end();
    const monitorUrl = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`;
    const createNode = (node: HaNode) =>
      run(node.name, [
        'pg_autoctl',
        'create',
        'postgres',
        '--pgdata',
        node.pgdata,
        '--pgport',
        String(node.port),
        '--name',
        node.name,
        '--dbname',
        'payhooks',
        '--monitor',
        monitorUrl,
        ...common,
        '--run',
      ]);
    createNode(nodes[0]);
    await waitSlowly(
      async () => (await states()).some((s) => s.reportedstate === 'single' || s.reportedstate === 'wait_primary'),
      'node1 to start as the primary',
      60_000,
    );
    createNode(nodes[1]);
    const pair: HaPair = {
      nodes,
      url: `postgres://postgres@127.0.0.1:${port1},127.0.0.1:${port2}/payhooks?target_session_attrs=read-write`,
      async primary(timeoutMs = 60_000) {
        let found: HaNode | undefined;
        await waitSlowly(
          async () => {
            const rows = await states();
            const row = rows.find(
              (s) => s.reportedstate === s.goalstate && ['primary', 'wait_primary', 'single'].includes(s.reportedstate),
            );
            found = nodes.find((n) => n.name === row?.nodename);
            return found !== undefined;
          },
          'a primary',
          timeoutMs,
        );
        return found as HaNode;
      },
      async settled(timeoutMs = 120_000) {
        await waitSlowly(
          async () => {
            const rows = await states();
            // pg_basebackup waits for a spread checkpoint (minutes at the defaults); one asked for now ends it.
            await checkpointOn(nodes, rows);
            const reported = rows
              .filter((s) => s.reportedstate === s.goalstate)
              .map((s) => s.reportedstate)
              .sort();
            return reported.join(',') === 'primary,secondary';
          },
          'a primary and a secondary in sync',
          timeoutMs,
        );
      },
      kill(node) {
        const child = children.get(node.name);
        if (child?.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
      },
      restart(node) {
        run(node.name, ['pg_autoctl', 'run', '--pgdata', node.pgdata]);
      },
      async switchover() {
        await runToEnd(['pg_autoctl', 'perform', 'switchover', '--pgdata', monitorData, '--wait', '90']);
      },
      async events() {
        return (
          await monitorQuery<{ line: string }>(
            `select eventtime::time || ' ' || nodename || ': ' || description as line from pgautofailover.event order by eventid`,
          ).catch(() => [])
        ).map((r) => r.line);
      },
      stop,
    };
    await pair.settled();
    return pair;
  } catch (error) {
    const logs = ['monitor', 'node1', 'node2']
      .filter((name) => existsSync(logOf(name)))
      .map((name) => `--- ${name}.log\n${readFileSync(logOf(name), 'utf8').slice(-1500)}`);
    await stop();
    throw new Error(`${(error as Error).message}\n${logs.join('\n')}`);
  }
}

/** A CHECKPOINT on the primary while a standby is being built (its base backup waits for one). */
async function checkpointOn(nodes: readonly HaNode[], rows: readonly { nodename: string; reportedstate: string }[]): Promise<void> {
  if (!rows.some((s) => ['wait_standby', 'catchingup'].includes(s.reportedstate))) return;
  const primary = nodes.find((n) =>
    rows.some((s) => s.nodename === n.name && ['wait_primary', 'single', 'primary'].includes(s.reportedstate)),
  );
  if (!primary) return;
  const client = new pg.Client({ host: '127.0.0.1', port: primary.port, user: 'postgres', database: 'payhooks' });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('checkpoint');
  } catch {
    // the primary is changing: the next round asks again
  } finally {
    await client.end().catch(() => undefined);
  }
}
