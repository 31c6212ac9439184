import type { ChildProcess } from 'node:child_process';
import { freePort } from '../helpers/servers.js';
import { existsSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collect, runCli, spawnCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';

// A first session as the README tells it, three real processes and no other step: `payhooks simulate
// --forward-to`, `payhooks serve` (no PAYHOOKS_WEBHOOK_SECRET: it finds the simulator's session file), then
// `payhooks trigger cash-payment`; the inbox ends up holding exactly the events the flow reports.

/** Everything a child writes to stdout so far, kept as it arrives. */
function output(child: ChildProcess): () => string {
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return () => text;
}

/** The pino lines of a service's stdout. */
function logLines(text: string): { msg?: string; eventId?: string; eventType?: string }[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg?: string; eventId?: string; eventType?: string });
}

// None of the service's environment may leak in from the machine running the tests: the point is that none is needed.
const CLEAN_ENV = {
  PAYHOOKS_WEBHOOK_SECRET: undefined,
  PAYHOOKS_API_KEY: undefined,
  PAYHOOKS_API_URL: undefined,
  DATABASE_URL: '',
  PAYHOOKS_DATA_DIR: undefined,
};

describe('a first session in three commands', () => {
  it('simulate --forward-to, serve, trigger cash-payment: the inbox holds the flow events', { timeout: 150_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-first-session-'));
    const [simulatorPort, servePort] = [await freePort(), await freePort()];
    const children: ChildProcess[] = [];
    try {
      const simulate = spawnCli(
        ['simulate', '--port', String(simulatorPort), '--forward-to', `http://127.0.0.1:${servePort}/webhooks`],
        CLEAN_ENV,
        dir,
      );
      children.push(simulate);
      const simulateOut = output(simulate);
      const simulateDone = collect(simulate, 140_000);
      const sessionFile = join(dir, '.payhooks', 'simulator.json');
      await waitFor(
        () => existsSync(sessionFile) && simulateOut().includes('Ctrl-C stops it'),
        'the simulator to write its session',
        60_000,
      );
      expect(statSync(sessionFile).mode & 0o777).toBe(0o600);
      expect(simulateOut()).toContain(`Forwarding all 19 event types to http://127.0.0.1:${servePort}/webhooks`);
      expect(simulateOut()).toMatch(/Signing secret: \S{20,}/);
      expect(simulateOut()).toContain(`PORT=${servePort} payhooks serve`);

      const serve = spawnCli(['serve'], { ...CLEAN_ENV, PORT: String(servePort), HOST: '127.0.0.1' }, dir);
      children.push(serve);
      const serveOut = output(serve);
      const serveDone = collect(serve, 140_000);
      await waitFor(() => serveOut().includes('payhooks is receiving webhooks'), 'serve to listen', 90_000);
      expect(logLines(serveOut()).map((line) => line.msg)).toContain(
        `using the simulator session from .payhooks/simulator.json: secret and API at http://127.0.0.1:${simulatorPort}; set PAYHOOKS_WEBHOOK_SECRET to override`,
      );
      expect(serveOut()).not.toMatch(/PAYHOOKS_API_KEY is not set/);

      const trigger = await runCli(['trigger', 'cash-payment'], CLEAN_ENV, dir, 60_000);
      expect(trigger.stderr).toBe('');
      expect(trigger.code).toBe(0);
      expect(trigger.stdout).toContain(`simulator: http://127.0.0.1:${simulatorPort} (from .payhooks/simulator.json)`);
      const reported = [...trigger.stdout.matchAll(/^ {2}([A-Z_]+) +(evt_\S+)$/gm)].map((match) => ({
        eventType: match[1],
        eventId: match[2],
      }));
      expect(reported.map((event) => event.eventType)).toEqual([
        'CUSTOMER_CREATED',
        'INVOICE_CREATED',
        'PAYMENT_ATTEMPT_SUCCEEDED',
        'INVOICE_PAID',
        'PAYMENT_COMPLETED',
      ]);

      const stored = () => logLines(serveOut()).filter((line) => line.msg === 'webhook stored');
      await waitFor(() => stored().length >= reported.length, 'serve to store the five deliveries', 60_000);
      serve.kill('SIGTERM');
      expect((await serveDone).code).toBe(0);

      const listed = await runCli(['events', 'list', '--json'], CLEAN_ENV, dir, 60_000);
      expect(listed.code).toBe(0);
      const inbox = JSON.parse(listed.stdout) as { eventId: string; eventType: string; deliveries: number }[];
      const byId = (events: { eventId?: string; eventType?: string }[]) =>
        events.map(({ eventId, eventType }) => `${eventType} ${eventId}`).sort();
      expect(byId(inbox)).toEqual(byId(reported));
      expect(inbox.every((event) => event.deliveries === 1)).toBe(true);

      simulate.kill('SIGTERM');
      expect((await simulateDone).code).toBe(0);
      expect(existsSync(sessionFile)).toBe(false);
    } finally {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
