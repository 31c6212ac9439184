// Issue 25: the late fee as a process test. `payhooks serve` (embedded database, handlers in-process) runs a handler
// that creates a late-fee invoice through ctx.api inside ctx.effect, against the simulator on loopback. An HTTP
// relay in front of the simulator lets the create call through, waits until the simulator has applied it, and then
// SIGKILLs serve before the answer can reach it: the call happened and its step has no record. serve is started
// again on the same data directory: the step, found started and idempotent (the client sent its key), is called
// again with the same key, and the simulator answers the repeat without creating a second invoice.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { startSimulator } from '../../src/simulator/index.js';
import { effectKey } from '../../src/worker/effects.js';
import { collect, runCli, spawnCli, waitForLog } from '../helpers/cli.js';
import { freePort, listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

const lateFeeHandlers = fileURLToPath(new URL('../fixtures/late-fee-handlers.mjs', import.meta.url));

/** The HTTP headers a relay must not copy: they describe one connection, not the request. */
const HOP_BY_HOP = new Set(['host', 'connection', 'content-length', 'transfer-encoding', 'keep-alive']);

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
    req.on('aborted', () => reject(new Error('request aborted')));
  });
}

/**
 * A relay to `target` that runs `onCreate` on each `POST /v1/invoices` after the target has answered it, before the
 * answer goes back; `onCreate` returning false drops the answer (the socket is destroyed).
 */
function relay(target: string, onCreate: (key: string) => boolean) {
  return createServer((req: IncomingMessage, res: ServerResponse) => {
    void (async () => {
      try {
        const body = await readBody(req);
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter((e): e is [string, string] => typeof e[1] === 'string' && !HOP_BY_HOP.has(e[0])),
        );
        const answer = await fetch(`${target}${req.url}`, {
          method: req.method,
          headers,
          body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
        });
        const text = Buffer.from(await answer.arrayBuffer());
        if (req.method === 'POST' && req.url === '/v1/invoices' && !onCreate(String(req.headers['x-idempotency-key'] ?? ''))) {
          res.destroy();
          return;
        }
        const kept = [...answer.headers].filter(([name]) => !HOP_BY_HOP.has(name) && name !== 'content-encoding');
        res.writeHead(answer.status, Object.fromEntries(kept)).end(text);
      } catch {
        res.destroy();
      }
    })();
  });
}

describe('a late fee through ctx.api inside ctx.effect, serve SIGKILLed between the call and its record', () => {
  it('after the restart the simulator holds exactly one late-fee invoice; the step completed on its second call with the same key', {
    timeout: 120_000,
  }, async () => {
    const simulator = await startSimulator({ logger: pino({ level: 'silent' }) });
    const creates: string[] = [];
    let servePid: number | undefined;
    const proxy = await listen(
      relay(simulator.url, (key) => {
        creates.push(key);
        if (creates.length > 1 || servePid === undefined) return true;
        // The simulator has created the invoice; serve has not seen the answer, so it cannot have recorded the step.
        process.kill(servePid, 'SIGKILL');
        return false;
      }),
    );
    try {
      const client = createClient({ apiKey: 'sk_test_late_fee', environment: simulator.url, rateLimit: false });
      const port = await freePort();
      const endpoint = await client.webhooks.create({
        url: `http://127.0.0.1:${port}/webhooks`,
        description: 'late fee kill test',
        enabledEvents: ['INVOICE_PAID'],
      });
      const { secret } = await client.webhooks.getSecret(endpoint.id);

      const dir = mkdtempSync(join(tmpdir(), 'payhooks-late-fee-'));
      seedDefaultDataDir(dir);
      const handled = join(dir, 'handled.txt');
      // A short lease, so that the restarted serve takes the killed run's event over within seconds.
      writeFileSync(
        join(dir, 'payhooks.config.json'),
        JSON.stringify({ worker: { handlerTimeoutMs: 2000, leaseMs: 3000, pollIntervalMs: 200, backoff: { baseMs: 100, maxMs: 500 } } }),
      );
      const env = {
        PAYHOOKS_WEBHOOK_SECRET: secret,
        PAYHOOKS_API_KEY: 'sk_test_late_fee',
        PAYHOOKS_API_URL: proxy.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: '',
        HANDLED_FILE: handled,
      };

      const first = spawnCli(['serve', '--handlers', lateFeeHandlers], env, dir);
      const firstDone = collect(first, 100_000);
      await waitForLog(first, /receiving webhooks/);
      servePid = first.pid;

      const customer = await client.customers.create({ username: 'late-payer', name: 'Late Payer', email: 'late@example.com' });
      const invoice = await client.invoices.create({
        customerId: customer.id,
        dueDate: '2026-12-01T06:00:00Z',
        items: [{ quantity: 1, concept: { displayName: 'Tuition', amount: 250_000, currency: 'MXN' } }],
      });
      const { payment } = await client.invoices.requestPayment(invoice.id, { paymentType: 'TRANSFER' });
      await client.sandbox.completePayment(payment.id, { outcome: 'SUCCEEDED' });

      const killed = await firstDone;
      expect(killed.code).toBeNull();
      expect(creates).toHaveLength(1);
      // The create was applied: the customer has the fee, though serve never saw it.
      const feesOf = async () => {
        const fees: string[] = [];
        for await (const inv of client.invoices.iterate()) if (inv.customerId === customer.id && inv.id !== invoice.id) fees.push(inv.id);
        return fees;
      };
      expect(await feesOf()).toHaveLength(1);

      const second = spawnCli(['serve', '--handlers', lateFeeHandlers], env, dir);
      const secondDone = collect(second, 100_000);
      await waitFor(
        () => {
          try {
            return readFileSync(handled, 'utf8').length > 0;
          } catch {
            return false;
          }
        },
        'the restarted serve to finish the handler',
        60_000,
      ).catch(async (err) => {
        second.kill('SIGTERM');
        const out = await secondDone;
        throw new Error(`${err}\n${out.stdout}\n${out.stderr}`);
      });
      second.kill('SIGTERM');
      expect((await secondDone).code).toBe(0);

      const [eventId, feeId] = readFileSync(handled, 'utf8').trim().split(' ');
      // One late fee, the one the first call created: the second call got the first's answer.
      expect(await feesOf()).toEqual([feeId]);
      expect(creates).toEqual([
        effectKey('default', eventId!, 'late-fees', 'late-fee'),
        effectKey('default', eventId!, 'late-fees', 'late-fee'),
      ]);

      const listed = await runCli(['effects', 'list', eventId!, '--json'], { DATABASE_URL: '' }, dir);
      expect(listed.code).toBe(0);
      const steps = JSON.parse(listed.stdout) as { step: string; state: string; idempotent: boolean; calls: number; attempt: number }[];
      expect(steps).toEqual([expect.objectContaining({ step: 'late-fee', state: 'completed', idempotent: true, calls: 2, attempt: 2 })]);
      const events = JSON.parse((await runCli(['events', 'list', '--json'], { DATABASE_URL: '' }, dir)).stdout) as { status: string }[];
      expect(events.map((e) => e.status)).toEqual(['done']);
    } finally {
      await proxy.close();
      await simulator.close();
    }
  });
});
