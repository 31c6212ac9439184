import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { BodyBudget } from '../../src/internal/limited-body.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase } from '../../src/store/database.js';
import { buildIfStale, collect, waitForLog } from '../helpers/cli.js';
import { post, signedDelivery } from '../helpers/deliveries.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('the in-flight body budget', () => {
  it('makes the largest unfinished body give way, so a small one always fits', () => {
    const budget = new BodyBudget(1000);
    const evicted: string[] = [];
    const big = budget.hold(() => evicted.push('big'));
    const medium = budget.hold(() => evicted.push('medium'));
    expect(big.add(600)).toBe(true);
    expect(medium.add(300)).toBe(true);
    const small = budget.hold(() => evicted.push('small'));
    expect(small.add(200)).toBe(true); // 1,100 > 1,000: the largest (big) gives way
    expect(evicted).toEqual(['big']);
    expect(budget.heldBytes).toBe(500);
    expect(big.add(1)).toBe(false); // evicted: it may not come back
    // A body that is itself the largest when the budget runs out is refused, and the others stay.
    const greedy = budget.hold(() => evicted.push('greedy'));
    expect(greedy.add(900)).toBe(false);
    expect(evicted).toEqual(['big']);
    small.release();
    medium.release();
    expect(budget.heldBytes).toBe(0);
    expect(() => new BodyBudget(0)).toThrow(RangeError);
  });
});

/** CPU time a process has used, in clock ticks (utime + stime in /proc). */
function cpuTicks(pid: number): number {
  // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

/** A check for `waitFor` that is true once the process used under 2 ticks (20 ms) of CPU since the previous check. */
function cpuQuiet(pid: number): () => Promise<boolean> {
  let last = cpuTicks(pid);
  return async () => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    const now = cpuTicks(pid);
    const used = now - last;
    last = now;
    return used < 2;
  };
}

/** Peak resident memory of a process, in MiB (VmHWM in /proc). */
function peakRssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

describe.skipIf(!pgUrl || process.platform !== 'linux')('payhooks serve under 2,000 connections holding partial bodies', () => {
  const schema = uniqueSchema('flood');
  afterAll(async () => {
    await dispose(await openDatabase({ url: pgUrl!, schema }));
  });

  it('stays under 300 MiB of memory, and valid deliveries still get 200, the fastest of three within 1 s', {
    timeout: 120_000,
  }, async () => {
    const scheme = createDefaultScheme({ secrets: 'flood-secret' });
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-flood-'));
    const env = { PAYHOOKS_WEBHOOK_SECRET: 'flood-secret', PORT: '0', HOST: '127.0.0.1', DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema };
    // The built command, as users run it (not through the test's TypeScript loader, which has a memory cost of its own).
    await buildIfStale();
    const serve = spawn(process.execPath, [join(root, 'bin/payhooks.js'), 'serve'], {
      cwd: dir,
      env: { ...process.env, PAYHOOKS_LOG_LEVEL: 'info', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const done = collect(serve, 110_000);
    const url = new URL(String((await waitForLog(serve, /receiving webhooks/, 60_000)).url));
    const sockets: Socket[] = [];
    try {
      console.info(`flood: serve peak RSS before the flood ${peakRssMiB(serve.pid!).toFixed(0)} MiB`);
      // Each connection announces a 1 MiB body, sends a quarter of it, and then holds: 500 MiB if all were kept.
      const part = Buffer.alloc(256 * 1024, 0x61);
      const head = `POST /webhooks HTTP/1.1\r\nhost: ${url.host}\r\ncontent-type: application/json\r\ncontent-length: ${1024 * 1024}\r\n\r\n`;
      const written: Promise<unknown>[] = [];
      for (let i = 0; i < 2000; i++) {
        const socket = connect(Number(url.port), '127.0.0.1');
        socket.on('error', () => undefined);
        socket.write(head);
        written.push(new Promise((resolve) => socket.write(part, resolve)));
        sockets.push(socket);
      }
      // The claim is about connections that hold: measure once every part is sent and serve has dealt with them (its
      // CPU quiet), not after a fixed pause, which a loaded machine may not finish the flood in (2.8 s seen beside the
      // effect chaos run, 50 ms alone).
      await Promise.all(written);
      await waitFor(cpuQuiet(serve.pid!), 'serve to finish reading the flood', 60_000);
      // Three deliveries one after another, each answered 200, the fastest within 1 s. Starved by the flood, all three
      // would be slow (the held connections stay); one slow answer alone is the machine (1.3 s seen once beside the
      // effect chaos run, whose worker is SIGKILLed against the same server, against 185 ms usually).
      const ackMs: number[] = [];
      for (let n = 0; n < 3; n++) {
        const started = performance.now();
        const answer = await post(
          url.href,
          signedDelivery(scheme, exampleEvent('INVOICE_PAID', { eventId: `evt_through_the_flood_${n}` })),
        );
        ackMs.push(performance.now() - started);
        expect(answer.status).toBe(200);
      }
      expect(Math.min(...ackMs)).toBeLessThan(1000);
      const peak = peakRssMiB(serve.pid!);
      console.info(
        `flood: 2,000 connections holding 256 KiB each; serve peak RSS ${peak.toFixed(0)} MiB; valid deliveries answered in ${ackMs.map((ms) => ms.toFixed(0)).join(', ')} ms`,
      );
      // Without the body budget the flood alone would hold 500 MiB. What remains above the 90 MiB at rest is mostly
      // refused bodies' buffers waiting for the garbage collector (the live heap stays near 60 MB, seen with
      // --trace-gc), so the peak moves with GC timing: 210 to 261 MiB over eight runs.
      expect(peak).toBeLessThan(300);

      // A body trickled at a byte a second is cut off at the request timeout (15 s), not read for minutes.
      const slow = connect(Number(url.port), '127.0.0.1');
      slow.on('error', () => undefined);
      slow.write(head);
      const trickle = setInterval(() => slow.write('a'), 1000);
      const cutAfterMs = await new Promise<number>((resolve) => {
        const since = performance.now();
        slow.once('close', () => resolve(performance.now() - since));
      });
      clearInterval(trickle);
      console.info(`flood: a body trickled at 1 byte/s was cut off after ${(cutAfterMs / 1000).toFixed(1)} s`);
      expect(cutAfterMs).toBeLessThan(15_000 + 4000);
    } finally {
      for (const socket of sockets) socket.destroy();
      serve.kill('SIGTERM');
      await done;
    }
  });
});
