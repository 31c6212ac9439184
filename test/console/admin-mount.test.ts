// The console's API as apps mount it (hooks.admin() with Express, node:http and Fetch) and as `payhooks serve`
// serves it, over HTTP on loopback.
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { exampleEvent, signedRequest } from '../../src/testing/index.js';
import { collect, runCli, spawnCli, waitForLog } from '../helpers/cli.js';
import { listen } from '../helpers/servers.js';

const TOKEN = 'mount-test-console-token-0123456789abcdefgh';
const SECRET = 'mount-secret';
const bearer = { authorization: `Bearer ${TOKEN}` };

describe('hooks.admin() mounted in an app', () => {
  let hooks: Payhooks;
  beforeAll(async () => {
    hooks = createPayhooks({ secret: SECRET, database: { dataDir: 'memory://' }, logger: pino({ level: 'silent' }) });
    await hooks.receive(signedRequest(exampleEvent('INVOICE_PAID', { eventId: 'evt_mounted' }), { secret: SECRET }));
  });
  afterAll(() => hooks.stop());

  it('Express, next to express.json(): lists, answers 401 without the token, and replays with a JSON body', async () => {
    const app = express();
    app.use(express.json());
    app.use('/admin/api', hooks.admin({ token: TOKEN }).express());
    const server = await listen(createServer(app));
    try {
      const listed = await fetch(`${server.url}/admin/api/events?type=INVOICE_PAID`, { headers: bearer });
      expect(listed.status).toBe(200);
      expect(listed.headers.get('cache-control')).toBe('no-store');
      expect(((await listed.json()) as { events: { eventId: string }[] }).events.map((e) => e.eventId)).toEqual(['evt_mounted']);
      expect((await fetch(`${server.url}/admin/api/events`)).status).toBe(401);
      const replay = await fetch(`${server.url}/admin/api/replay`, {
        method: 'POST',
        headers: { ...bearer, 'content-type': 'application/json' },
        body: JSON.stringify({ status: 'dead' }),
      });
      expect(await replay.json()).toEqual({ replayed: 0, eventIds: [], left: 0 });
    } finally {
      await server.close();
    }
  });

  it('node:http and Fetch answer the same; a console without a token answers 404', async () => {
    const node = hooks.admin({ token: TOKEN }).node();
    const server = await listen(createServer((req, res) => void node(req, res)));
    try {
      const viaNode = await fetch(`${server.url}/admin/api/events/evt_mounted`, { headers: bearer });
      const viaFetch = await hooks.admin({ token: TOKEN }).fetch()(
        new Request('http://127.0.0.1/admin/api/events/evt_mounted', { headers: bearer }),
      );
      expect(viaNode.status).toBe(200);
      expect(await viaNode.json()).toEqual(await viaFetch.json());
      const off = await hooks.admin({ token: undefined }).fetch()(new Request('http://127.0.0.1/admin/api/events', { headers: bearer }));
      expect(off.status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it('refuses a weak token when mounted', () => {
    expect(() => hooks.admin({ token: 'changeme' })).toThrow(RangeError);
  });
});

describe('payhooks serve and PAYHOOKS_ADMIN_TOKEN', () => {
  const env = { PAYHOOKS_WEBHOOK_SECRET: SECRET, PORT: '0', HOST: '127.0.0.1', DATABASE_URL: '' };

  it('with the token: the console API lists what serve received, and 401 without the token; without it: 404', {
    timeout: 90_000,
  }, async () => {
    for (const token of [TOKEN, undefined]) {
      const dir = mkdtempSync(join(tmpdir(), 'payhooks-admin-serve-'));
      const serve = spawnCli(['serve'], { ...env, PAYHOOKS_ADMIN_TOKEN: token }, dir);
      const done = collect(serve, 80_000);
      try {
        const url = String((await waitForLog(serve, /receiving webhooks/)).url);
        const base = url.replace(/\/webhooks$/, '');
        const delivery = signedRequest(exampleEvent('PAYMENT_COMPLETED', { eventId: 'evt_served_admin' }), { secret: SECRET });
        expect((await fetch(url, delivery)).status).toBe(200);
        const listed = await fetch(`${base}/admin/api/events`, { headers: bearer });
        const page = await fetch(`${base}/admin`);
        if (token) {
          expect(page.status).toBe(200);
          expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
          expect(await page.text()).toContain('<script src="/admin/console.js" defer></script>');
          expect(listed.status).toBe(200);
          expect(((await listed.json()) as { events: unknown[] }).events).toEqual([
            expect.objectContaining({ eventId: 'evt_served_admin' }),
          ]);
          for (const path of ['/admin/api/events', '/admin/api/stats', '/admin/api/events/evt_served_admin'])
            expect((await fetch(`${base}${path}`, { headers: { authorization: 'Bearer nope' } })).status).toBe(401);
          expect((await fetch(`${base}/admin/api/events/evt_served_admin/replay`, { method: 'POST' })).status).toBe(401);
        } else {
          expect(page.status).toBe(404);
          expect(listed.status).toBe(404);
          expect((await fetch(`${base}/admin/api/stats`, { headers: bearer })).status).toBe(404);
        }
      } finally {
        serve.kill('SIGTERM');
      }
      expect((await done).code).toBe(0);
    }
  });

  it('a weak token stops the start with the reason, before anything opens, and never prints the token', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-admin-serve-'));
    const result = await runCli(['serve'], { ...env, PAYHOOKS_ADMIN_TOKEN: 'hunter2' }, dir);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      'PAYHOOKS_ADMIN_TOKEN is too weak: it has 7 characters; use 32 or more. Unset it to turn the console off.',
    );
    expect(result.stdout + result.stderr).not.toContain('hunter2');
  });
});
