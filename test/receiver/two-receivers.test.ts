// Two `serve --role receiver` processes behind one address (HAProxy from Debian, round robin, health-checked on
// /readyz) share a load of about 200 deliveries a second; one is SIGKILLed mid-run. The sender retries on a 5xx or a
// connection failure, as the service does, and its retries land on the other receiver: every delivery is acknowledged
// and stored, none lost. Where `ip netns` works (root), each receiver is a host of its own (a network namespace
// joined by a veth pair, reaching PostgreSQL through a forwarder on its link); elsewhere both run on loopback ports.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { createDefaultScheme } from '../../src/signature/index.js';
import { cliNodeArgs, runCli, waitForLog } from '../helpers/cli.js';
import { forwardTo, makeNamespacedHost, type NamespacedHost, netnsUnavailable } from '../helpers/netns.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { describeFigures, sendUnderLoad } from '../helpers/retrying-sender.js';
import { waitFor } from '../helpers/wait.js';

const HAPROXY = '/usr/sbin/haproxy';
const missing = !existsSync(HAPROXY)
  ? `no HAProxy at ${HAPROXY} (apt-get install haproxy; .ci/run does)`
  : !pgUrl
    ? 'no PostgreSQL server'
    : undefined;
if (!existsSync(HAPROXY) && process.env.CI === 'true') throw new Error(`CI needs HAProxy: ${missing}`);
if (missing) console.warn(`[payhooks tests] the two-receivers test is SKIPPED: ${missing}`);
const noNetns = netnsUnavailable();
if (!missing && noNetns)
  console.warn(`[payhooks tests] two receivers: no network namespaces here (${noNetns}); the receivers run on loopback ports instead`);

const SECRET = 'two-receivers-secret';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** The sum of `payhooks_deliveries_total` on a receiver's /metrics. */
async function deliveriesCounted(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return text
    .split('\n')
    .filter((line) => line.startsWith('payhooks_deliveries_total'))
    .reduce((sum, line) => sum + Number(line.split(' ').pop()), 0);
}

describe.skipIf(missing !== undefined)('two receivers behind one address', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await Promise.resolve(cleanup()).catch(() => undefined);
  }, 60_000);

  it('share a load; one is SIGKILLed and the sender retries land on the other: every delivery stored, none lost', {
    timeout: 240_000,
  }, async () => {
    const schema = uniqueSchema('two_receivers');
    const real = new URL(pgUrl!);
    const admin = new pg.Client({ connectionString: pgUrl! });
    await admin.connect();
    cleanups.push(async () => {
      await admin.query(`drop schema if exists "${schema}" cascade`);
      await admin.end();
    });
    const env = { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema, PAYHOOKS_WEBHOOK_SECRET: SECRET };
    expect((await runCli(['migrate'], env)).code).toBe(0);

    const dir = mkdtempSync(join(tmpdir(), 'payhooks-two-receivers-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const receivers: { child: ChildProcess; base: string; host?: NamespacedHost }[] = [];
    for (const index of [0, 1]) {
      const args = ['serve', '--role', 'receiver'];
      const node = [process.execPath, ...cliNodeArgs(args), ...args] as const;
      let command: [string, string[]];
      let base: string;
      let receiverEnv: Record<string, string>;
      let host: NamespacedHost | undefined;
      if (noNetns) {
        const port = await freePort();
        base = `http://127.0.0.1:${port}`;
        command = [node[0], node.slice(1)];
        receiverEnv = { ...env, HOST: '127.0.0.1', PORT: String(port) };
      } else {
        host = makeNamespacedHost(index);
        cleanups.push(() => host?.remove());
        const forwarder = await forwardTo(host.gateway, real);
        cleanups.push(() => new Promise<void>((resolve) => forwarder.close(() => resolve())));
        const url = new URL(pgUrl!);
        url.hostname = host.gateway;
        url.port = String((forwarder.address() as { port: number }).port);
        base = `http://${host.address}:8787`;
        command = host.exec(node[0], node.slice(1));
        receiverEnv = { ...env, DATABASE_URL: url.toString(), HOST: host.address, PORT: '8787' };
      }
      const child = spawn(command[0], command[1], {
        cwd: dir,
        env: { ...process.env, PAYHOOKS_LOG_LEVEL: 'info', ...receiverEnv },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      cleanups.push(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      });
      receivers.push({ child, base, host });
    }
    await Promise.all(receivers.map((r) => waitForLog(r.child, /receiving webhooks/, 60_000)));

    // Round robin over both, each checked on /readyz every half second; a failed connection is tried on the other.
    const frontPort = await freePort();
    const config = join(dir, 'haproxy.cfg');
    writeFileSync(
      config,
      [
        'global',
        '  maxconn 2000',
        'defaults',
        '  mode http',
        '  timeout connect 1s',
        '  timeout client 30s',
        '  timeout server 30s',
        '  retries 2',
        '  option redispatch',
        'frontend webhooks',
        `  bind 127.0.0.1:${frontPort}`,
        '  default_backend receivers',
        'backend receivers',
        '  balance roundrobin',
        '  option httpchk GET /readyz',
        '  http-check expect status 200',
        '  default-server inter 500 fall 2 rise 2',
        ...receivers.map((r, i) => `  server receiver${i} ${new URL(r.base).host} check`),
        '',
      ].join('\n'),
    );
    const haproxy = spawn(HAPROXY, ['-f', config, '-db'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let haproxyOutput = '';
    haproxy.stdout.on('data', (chunk: Buffer) => (haproxyOutput += chunk.toString()));
    haproxy.stderr.on('data', (chunk: Buffer) => (haproxyOutput += chunk.toString()));
    cleanups.push(() => {
      if (haproxy.exitCode === null) haproxy.kill('SIGKILL');
    });
    const front = `http://127.0.0.1:${frontPort}`;
    await waitFor(
      async () => (await fetch(`${front}/readyz`).catch(() => undefined))?.status === 200,
      `HAProxy to answer:\n${haproxyOutput}`,
      30_000,
    );

    const shares: number[] = [];
    const figures = await sendUnderLoad({
      url: `${front}/webhooks`,
      scheme: createDefaultScheme({ secrets: SECRET }),
      run: 'two',
      rate: 200,
      durationMs: 8000,
      faultAtMs: 3000,
      fault: async () => {
        // Both took a share of the load before one dies.
        for (const r of receivers) shares.push(await deliveriesCounted(r.base));
        receivers[0]!.child.kill('SIGKILL');
      },
    });
    const ids = [...figures.acked];
    const { rows } = await admin.query<{ n: string }>(`select count(*) as n from "${schema}".event_ledger where event_id = any($1)`, [ids]);
    const after = await deliveriesCounted(receivers[1]!.base);
    console.info(
      `[two-receivers] ${noNetns ? 'loopback ports' : 'namespaced hosts'}; before the kill receiver0 took ${shares[0]} deliveries and receiver1 ${shares[1]}; ` +
        `receiver1 ${after} in all; ${describeFigures(figures)}`,
    );
    expect(shares.every((n) => n > 0)).toBe(true);
    expect(
      receivers[0]!.child.signalCode ?? (await new Promise((resolve) => receivers[0]!.child.once('exit', (_c, s) => resolve(s)))),
    ).toBe('SIGKILL');
    // The survivor took everything after the kill: more than its share before it.
    expect(after).toBeGreaterThan(shares[1]!);
    expect(figures.acked.size).toBe(figures.sent);
    expect(Number(rows[0]?.n)).toBe(figures.sent);
  });
});
