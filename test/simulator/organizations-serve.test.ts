import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { collect, runCli, spawnCli } from '../helpers/cli.js';
import { freePort } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

// `payhooks serve` beside `payhooks simulate --accounts 3 --forward-to …/webhooks`, with no configuration at all:
// serve takes the session's three organizations as its accounts, receives each on /webhooks/<id> verified with that
// organization's secret, and refuses a delivery signed with one organization's secret sent to another's route.

function output(child: ChildProcess): () => string {
  let text = '';
  child.stdout?.on('data', (chunk: Buffer) => (text += chunk.toString()));
  return () => text;
}

function logLines(text: string): { msg?: string; eventId?: string; account?: string }[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { msg?: string; eventId?: string; account?: string });
}

const CLEAN_ENV = {
  PAYHOOKS_WEBHOOK_SECRET: undefined,
  PAYHOOKS_API_KEY: undefined,
  PAYHOOKS_API_URL: undefined,
  PAYHOOKS_CONFIG: undefined,
  DATABASE_URL: '',
  PAYHOOKS_DATA_DIR: undefined,
};

const ACCOUNTS = ['acct_1', 'acct_2', 'acct_3'];

describe('serve beside simulate --accounts 3', () => {
  it('receives each organization on /webhooks/<id> with its own secret, and nothing across', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-accounts-serve-'));
    const [simulatorPort, servePort] = [await freePort(), await freePort()];
    const children: ChildProcess[] = [];
    try {
      const simulate = spawnCli(
        ['simulate', '--port', String(simulatorPort), '--accounts', '3', '--forward-to', `http://127.0.0.1:${servePort}/webhooks`],
        CLEAN_ENV,
        dir,
      );
      children.push(simulate);
      const simulateOut = output(simulate);
      const simulateDone = collect(simulate, 170_000);
      const sessionFile = join(dir, '.payhooks', 'simulator.json');
      await waitFor(() => existsSync(sessionFile) && simulateOut().includes('Ctrl-C stops it'), 'the session file', 60_000);
      expect(simulateOut()).toMatch(new RegExp(`PORT=${servePort} payhooks serve +# receives each organization on /webhooks/<id>`));
      const session = JSON.parse(readFileSync(sessionFile, 'utf8')) as { accounts: { id: string; forwardTo: string }[] };
      expect(session.accounts.map((a) => a.forwardTo)).toEqual(ACCOUNTS.map((id) => `http://127.0.0.1:${servePort}/webhooks/${id}`));

      const serve = spawnCli(['serve'], { ...CLEAN_ENV, PORT: String(servePort), HOST: '127.0.0.1' }, dir);
      children.push(serve);
      const serveOut = output(serve);
      const serveDone = collect(serve, 170_000);
      await waitFor(() => serveOut().includes('payhooks is receiving webhooks'), 'serve to listen', 90_000);
      const messages = logLines(serveOut()).map((line) => line.msg);
      expect(messages).toContain(
        `using the simulator session from .payhooks/simulator.json: 3 accounts (acct_1, acct_2, acct_3), secrets and API at http://127.0.0.1:${simulatorPort}`,
      );
      expect(messages.filter((m) => m?.includes('deliveries will not arrive here'))).toEqual([]);

      // One flow per organization, each with its own key; the simulator delivers each to its own route.
      const emitted = new Map<string, string[]>();
      for (const account of ACCOUNTS) {
        const trigger = await runCli(['trigger', 'cash-payment', '--account', account], CLEAN_ENV, dir, 60_000);
        expect(trigger.stderr).toBe('');
        expect(trigger.code).toBe(0);
        emitted.set(
          account,
          [...trigger.stdout.matchAll(/^ {2}[A-Z_]+ +(evt_\S+)$/gm)].map((m) => m[1]!),
        );
        expect(emitted.get(account)).toHaveLength(5);
      }
      const stored = () => logLines(serveOut()).filter((line) => line.msg === 'webhook stored');
      await waitFor(() => stored().length >= 15, 'serve to store the fifteen deliveries', 60_000);
      for (const account of ACCOUNTS) {
        const mine = stored().filter((line) => line.account === account);
        expect(mine.map((line) => line.eventId).sort(), account).toEqual([...emitted.get(account)!].sort());
      }

      // Signed with acct_1's secret, sent to acct_2's route: refused. The same to acct_1's route: stored.
      const crossed = await runCli(
        ['trigger', 'CUSTOMER_UPDATED', '--to', `http://127.0.0.1:${servePort}/webhooks/acct_2`, '--account', 'acct_1'],
        CLEAN_ENV,
        dir,
        60_000,
      );
      expect(crossed.code).toBe(1);
      // serve answers a delivery its route's account cannot verify as it answers one for no account (docs/accounts.md).
      expect(crossed.stdout).toMatch(/^HTTP 404$/m);
      const crossedId = /sent CUSTOMER_UPDATED (evt_\S+)/.exec(crossed.stdout)?.[1];
      expect(crossedId).toBeDefined();
      const own = await runCli(
        ['trigger', 'CUSTOMER_UPDATED', '--to', `http://127.0.0.1:${servePort}/webhooks/acct_1`, '--account', 'acct_1'],
        CLEAN_ENV,
        dir,
        60_000,
      );
      expect(own.code).toBe(0);
      expect(own.stdout).toMatch(/HTTP 200/);
      const ownId = /sent CUSTOMER_UPDATED (evt_\S+)/.exec(own.stdout)?.[1];
      await waitFor(() => stored().some((line) => line.eventId === ownId), 'the own-route delivery to be stored', 30_000);
      expect(stored().filter((line) => line.eventId === crossedId)).toEqual([]);
      expect(stored().find((line) => line.eventId === ownId)?.account).toBe('acct_1');

      serve.kill('SIGTERM');
      expect((await serveDone).code).toBe(0);
      simulate.kill('SIGTERM');
      expect((await simulateDone).code).toBe(0);
    } finally {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });
});
