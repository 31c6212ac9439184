import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import type { ForwardDocument } from '../../src/sync/forward-document.js';
import { collect, spawnCli, waitForLog } from '../helpers/cli.js';
import { post, signedDelivery } from '../helpers/deliveries.js';
import { listen } from '../helpers/servers.js';

describe('payhooks serve with sinks in payhooks.config.json', () => {
  it('forwards each event, signed with the target secret read from the environment, which never reaches the logs', {
    timeout: 90_000,
  }, async () => {
    const targetSecret = 'whsec_erp_target_secret_value';
    const verify = createDefaultScheme({ secrets: targetSecret });
    const received: ForwardDocument[] = [];
    const target = await listen(
      createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const rawBody = Buffer.concat(chunks);
          try {
            verify.verify({ headers: req.headers as Record<string, string>, rawBody });
          } catch {
            res.writeHead(401).end();
            return;
          }
          received.push(JSON.parse(rawBody.toString('utf8')) as ForwardDocument);
          res.writeHead(202).end();
        });
      }),
    );
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-sinks-'));
    writeFileSync(
      join(dir, 'payhooks.config.json'),
      JSON.stringify({
        mirror: false,
        forward: [
          { name: 'erp', url: `${target.url}/inbound?token=abc`, secret: { env: 'ERP_FORWARD_SECRET' }, eventTypes: ['INVOICE_PAID'] },
        ],
      }),
    );
    const serve = spawnCli(
      ['serve'],
      {
        PAYHOOKS_WEBHOOK_SECRET: 'whsec_sender',
        ERP_FORWARD_SECRET: targetSecret,
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: '',
        PAYHOOKS_LOG_LEVEL: 'debug',
      },
      dir,
    );
    const done = collect(serve, 80_000);
    const [running, ready] = [waitForLog(serve, /^running: /), waitForLog(serve, /receiving webhooks/)];
    const forwarded = waitForLog(serve, /^forwarded$/, 60_000);
    try {
      // The query string may hold a token: the log names the target without it.
      expect((await running).msg).toMatch(
        /^running: HTTP forward erp to http:\/\/127\.0\.0\.1:\d+\/inbound; 4 at once, up to 10 attempts each$/,
      );
      const url = String((await ready).url);
      const sender = createDefaultScheme({ secrets: 'whsec_sender' });
      const paid = exampleEvent('INVOICE_PAID', { eventId: 'evt_serve_forward' });
      expect((await post(url, signedDelivery(sender, paid))).status).toBe(200);
      // Not a type the target asked for: stored, and ignored by the forward sink.
      expect((await post(url, signedDelivery(sender, exampleEvent('CUSTOMER_CREATED')))).status).toBe(200);
      expect(await forwarded).toMatchObject({ eventId: 'evt_serve_forward', status: 202, attempt: 1 });
      expect(received.map((doc) => doc.eventId)).toEqual(['evt_serve_forward']);
      expect(received[0]?.payhooks.sink).toBe('forward:erp');
    } finally {
      serve.kill('SIGTERM');
      await target.close();
    }
    const served = await done;
    expect(served.code).toBe(0);
    expect(served.stdout + served.stderr).not.toContain(targetSecret);
    expect(served.stdout + served.stderr).not.toContain('token=abc');
  });
});
