// The receiver adapters with accounts (docs/accounts.md#receiving): the account from the route by default, or from a
// function of the request; a delivery verified with that account's secrets only.
import { createServer } from 'node:http';
import express from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { createDefaultScheme } from '../../src/signature/index.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import { migrate } from '../../src/store/migrate.js';
import { envelope, post, signedDelivery } from '../helpers/deliveries.js';
import { errorMessage } from '../helpers/error-body.js';
import { ADAPTERS, listen } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const north = createDefaultScheme({ secrets: ['whsec_north_0123456789'] });
const south = createDefaultScheme({ secrets: ['whsec_south_0123456789'] });
const silent = pino({ level: 'silent' });

let store: PayhooksDatabase;
beforeAll(async () => {
  store = await openDatabase({ dataDir: 'memory://', schema: 'account_adapters' });
  await migrate(store);
});
afterAll(async () => {
  await store.close();
});

/** A server that hands `/webhooks/<account>` to the adapter, which finds the account in the path by default. */
function accountServer(adapter: (typeof ADAPTERS)[number], hooks: Payhooks) {
  if (adapter === 'express') {
    const app = express();
    app.post('/webhooks/:account', hooks.express());
    return createServer(app);
  }
  if (adapter === 'node') return createServer((req, res) => void hooks.node()(req, res));
  const handle = hooks.fetch();
  return createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const headers = new Headers(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    const response = await handle(new Request(`http://127.0.0.1${req.url}`, { method: req.method, headers, body: Buffer.concat(chunks) }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    res.end(await response.text());
  });
}

describe.each(ADAPTERS)('the %s adapter with two accounts', (adapter) => {
  let url: string;
  let close: () => Promise<void>;
  beforeAll(async () => {
    const hooks = createPayhooks({
      accounts: [
        { id: 'north', secret: 'whsec_north_0123456789' },
        { id: 'south', secret: 'whsec_south_0123456789' },
      ],
      database: store,
      logger: silent,
    });
    ({ url, close } = await listen(accountServer(adapter, hooks)));
  });
  afterAll(() => close());

  it("stores a delivery under its route's account, and the same eventId under each account once", async () => {
    const id = `${adapter}_same`;
    expect(await post(`${url}/webhooks/north`, signedDelivery(north, envelope(id)))).toEqual({ status: 200, body: { received: true } });
    expect(await post(`${url}/webhooks/south`, signedDelivery(south, envelope(id)))).toEqual({ status: 200, body: { received: true } });
    expect(await post(`${url}/webhooks/north`, signedDelivery(north, envelope(id)))).toEqual({
      status: 200,
      body: { received: true, duplicate: true },
    });
    expect((await getEvent(store, id, 'north'))?.deliveries).toBe(2);
    expect((await getEvent(store, id, 'south'))?.deliveries).toBe(1);
  });

  it("refuses north's signature on south's route, and an unknown account, with one answer", async () => {
    const id = `${adapter}_crossed`;
    const crossed = await post(`${url}/webhooks/south`, signedDelivery(north, envelope(id)));
    const unknown = await post(`${url}/webhooks/west`, signedDelivery(north, envelope(id)));
    expect(crossed.status).toBe(404);
    expect(unknown).toEqual(crossed);
    expect(errorMessage(crossed.body)).toBe('No webhook endpoint here takes this delivery.');
    expect(await getEvent(store, id)).toBeUndefined();
  });
});

describe('an account from a function of the request', () => {
  it('takes it from a header the app sets', async () => {
    const hooks = createPayhooks({
      accounts: [{ id: 'north', secret: 'whsec_north_0123456789' }],
      database: store,
      logger: silent,
    });
    const handle = hooks.fetch({ account: (request) => String(request.headers['x-tenant'] ?? '') });
    const delivery = signedDelivery(north, envelope('fn_header'));
    const send = (tenant: string) =>
      handle(
        new Request('http://127.0.0.1/hooks', {
          method: 'POST',
          headers: { ...delivery.headers, 'x-tenant': tenant },
          body: delivery.body,
        }),
      );
    expect((await send('north')).status).toBe(200);
    expect((await send('south')).status).toBe(404);
    expect((await getEvent(store, 'fn_header'))?.account).toBe('north');
  });
});

describe("handlers see the event's account", () => {
  it('ctx.account and the ctx.api of that account', async () => {
    const db = await openDatabase({ dataDir: 'memory://', schema: 'account_ctx' });
    await migrate(db);
    const hooks = createPayhooks<{ name: string }>({
      accounts: [
        { id: 'north', secret: 'whsec_north_0123456789', api: { name: 'north-client' } },
        { id: 'south', secret: 'whsec_south_0123456789', api: { name: 'south-client' } },
      ],
      database: db,
      logger: silent,
      worker: { pollIntervalMs: 20 },
    });
    const seen: string[] = [];
    hooks.onAny(async (event, ctx) => {
      seen.push(`${ctx.account}:${event.eventId}:${ctx.api?.name}`);
    });
    try {
      for (const [account, scheme] of [
        ['north', north],
        ['south', south],
      ] as const) {
        const delivery = signedDelivery(scheme, envelope('ctx_same'));
        const answer = await hooks.receive({ method: 'POST', headers: delivery.headers, rawBody: Buffer.from(delivery.body), account });
        expect(answer.status).toBe(200);
      }
      await hooks.start();
      await waitFor(() => seen.length >= 2, 'both events handled', 30_000);
      expect(seen.sort()).toEqual(['north:ctx_same:north-client', 'south:ctx_same:south-client']);
    } finally {
      await hooks.stop();
      await db.close().catch(() => undefined);
    }
  });
});
