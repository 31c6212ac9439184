import { createServer } from 'node:http';
import { sql } from 'kysely';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiClient } from '../../src/client/index.js';
import { exampleEvent } from '../../src/events/index.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { getEvent } from '../../src/store/inbox.js';
import type { ForwardDocument } from '../../src/sync/forward-document.js';
import { registerHttpForward } from '../../src/sync/http-forward.js';
import { registerMirror } from '../../src/sync/mirror/mirror-sink.js';
import { putEvent } from '../helpers/inbox.js';
import { uniqueSchema } from '../helpers/pg.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });
const SECRET = 'whsec_sink_order_target';

/** A forward target on loopback that answers `status()` (changeable while it runs) and keeps what it was sent. */
async function target(initial: number | (() => number)) {
  let answer = typeof initial === 'number' ? () => initial : initial;
  const received: { eventId: string; status: number }[] = [];
  const listening = await listen(
    createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('error', () => undefined);
      req.on('end', () => {
        const status = answer();
        received.push({ eventId: (JSON.parse(Buffer.concat(chunks).toString('utf8')) as ForwardDocument).eventId, status });
        res.writeHead(status, { 'content-type': 'application/json' }).end(status >= 400 ? '{"error":"refused"}' : '{}');
      });
    }),
  );
  return {
    ...listening,
    received,
    /** The eventIds it accepted (2xx), in the order they came. */
    accepted: () => received.filter((r) => r.status < 300).map((r) => r.eventId),
    answer(next: number) {
      answer = () => next;
    },
  };
}

/** Three events of one customer, received in this order, each renaming it. */
function customerEvents(prefix: string) {
  const names = ['First Name', 'Second Name', 'Third Name'];
  return names.map((name, i) => {
    const base = exampleEvent(i === 0 ? 'CUSTOMER_CREATED' : 'CUSTOMER_UPDATED', { eventId: `${prefix}_${i + 1}` });
    return { ...base, data: { ...base.data, id: `cus_${prefix}`, name } };
  });
}

async function handlerRuns(store: PayhooksDatabase, eventId: string): Promise<Record<string, string>> {
  const { rows } = await sql<{ handler: string; outcome: string }>`select handler, outcome from ${sql.id(store.schema, 'handler_runs')}
    where event_id = ${eventId}`.execute(store.db);
  return Object.fromEntries(rows.map((row) => [row.handler, row.outcome]));
}

describe.each(backends)('sinks of one resource, inbox on $name', (backend) => {
  let store: PayhooksDatabase | undefined;
  let hooks: Payhooks<ApiClient> | undefined;
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await hooks?.stop(2000);
    hooks = undefined;
    for (const close of closers.splice(0)) await close();
    if (store) await dispose(store);
    store = undefined;
  });

  async function setup(worker: Record<string, unknown>) {
    store = await backend.open();
    hooks = createPayhooks<ApiClient>({
      secret: 'whsec_source',
      database: store,
      logger: silent,
      worker: { pollIntervalMs: 50, ...worker },
    });
    return { store, hooks };
  }

  it.skipIf(!backend.available)(
    'a target that is down holds back neither the mirror nor a target that is up; once back, it gets the events in order, each once',
    { timeout: 90_000 },
    async () => {
      // Attempts enough that the first event never dies while the target is down: only its turn at that target waits.
      const { store, hooks } = await setup({ maxAttempts: 1000, backoff: { baseMs: 100, maxMs: 300 } });
      const mirrorSchema = uniqueSchema('mirror');
      closers.push(async () => void (await sql.raw(`drop schema if exists "${mirrorSchema}" cascade`).execute(store.db)));
      const down = await target(503);
      const up = await target(200);
      closers.push(down.close, up.close);
      await registerMirror(hooks, { schema: mirrorSchema });
      await registerHttpForward(hooks, { name: 'down', url: down.url, secret: SECRET });
      await registerHttpForward(hooks, { name: 'up', url: up.url, secret: SECRET });
      const events = customerEvents('evt_order');
      const ids = events.map((e) => e.eventId);
      for (const event of events) await putEvent(store, event);
      await hooks.start();

      // The target that is up gets every event of the customer, in order, while the first waits for the one that is down.
      await waitFor(() => up.accepted().length === 3, 'the target that is up to get all three events', 20_000);
      expect(up.accepted()).toEqual(ids);
      const mirrored = async () =>
        (await sql<{ name: string }>`select name from ${sql.id(mirrorSchema, 'customers')} where id = 'cus_evt_order'`.execute(store.db))
          .rows[0]?.name;
      await waitFor(async () => (await mirrored()) === 'Third Name', 'the mirror to hold the newest name');
      await waitFor(() => down.received.length >= 3, 'a few attempts at the target that is down');
      // The target that is down saw only the first event: the later ones wait for their turn there.
      expect(new Set(down.received.map((r) => r.eventId))).toEqual(new Set([ids[0]]));
      for (const id of ids.slice(1)) {
        expect(await handlerRuns(store, id!)).toEqual({ mirror: 'done', 'forward:up': 'done' });
        expect((await getEvent(store, id!))?.status).toMatch(/^(pending|processing)$/);
      }

      down.answer(200);
      for (const id of ids) await waitFor(async () => (await getEvent(store, id))?.status === 'done', `${id} done`, 20_000);
      expect(down.accepted()).toEqual(ids);
      // Nothing sent twice to the target that was up, however often the first event came back for the other.
      expect(up.received.map((r) => r.eventId)).toEqual(ids);
      for (const id of ids) expect(await handlerRuns(store, id)).toEqual({ mirror: 'done', 'forward:up': 'done', 'forward:down': 'done' });
    },
  );

  it.skipIf(!backend.available)(
    'a target answering 400 beside one answering 503 then 200 is sent each event once; the events end dead for it alone, and replay sends them there again',
    { timeout: 90_000 },
    async () => {
      const { store, hooks } = await setup({ backoff: { baseMs: 100, maxMs: 300 } });
      let flakyCalls = 0;
      const refusing = await target(400);
      const flaky = await target(() => (++flakyCalls <= 4 ? 503 : 200));
      closers.push(refusing.close, flaky.close);
      await registerHttpForward(hooks, { name: 'refusing', url: refusing.url, secret: SECRET });
      await registerHttpForward(hooks, { name: 'flaky', url: flaky.url, secret: SECRET });
      const events = customerEvents('evt_refused');
      const ids = events.map((e) => e.eventId);
      for (const event of events) await putEvent(store, event);
      await hooks.start();

      for (const id of ids) await waitFor(async () => (await getEvent(store, id))?.status === 'dead', `${id} dead`, 20_000);
      expect(flaky.accepted()).toEqual(ids);
      expect(refusing.received.map((r) => r.eventId)).toEqual(ids);
      for (const id of ids) {
        expect(await handlerRuns(store, id)).toEqual({ 'forward:refusing': 'dead', 'forward:flaky': 'done' });
        const dead = await getEvent(store, id);
        // The operator reads which sink gave up, and why.
        expect(dead?.lastError).toMatch(/^forward:refusing: DeadLetterError: POST http:\/\/127\.0\.0\.1:\d+\/ answered 400 Bad Request/);
        expect(dead?.completedHandlers).toEqual(['forward:flaky']);
        expect(dead?.givenUpHandlers).toEqual(['forward:refusing']);
      }

      refusing.answer(204);
      expect((await hooks.replay({ status: 'dead' })).sort()).toEqual([...ids].sort());
      for (const id of ids) await waitFor(async () => (await getEvent(store, id))?.status === 'done', `${id} done after replay`, 20_000);
      expect(refusing.accepted()).toEqual(ids);
      // The replay ran only the sink that had given up.
      expect(flaky.accepted()).toEqual(ids);
    },
  );
});
