import { createServer } from 'node:http';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { type ApiClient, createClient } from '../../src/client/index.js';
import { resourceKeyOf } from '../../src/events/resource-key.js';
import { createPayhooks, type Payhooks } from '../../src/payhooks.js';
import { type FlowName, runFlow, startSimulator } from '../../src/simulator/index.js';
import { listen } from '../helpers/servers.js';
import { backends, dispose } from '../helpers/stores.js';
import { waitFor } from '../helpers/wait.js';

// Three organizations' flows, shuffled together with duplicates, received by one payhooks with three accounts whose
// handlers read the current state through ctx.api: every read is of the handler's own organization, and the
// simulator's request log shows no key used for another organization's resource, the reads of the worker included.

const silent = pino({ level: 'silent' });
const HANDLED = ['CUSTOMER_CREATED', 'INVOICE_PAID', 'INVOICE_PAID_OTHER', 'PAYMENT_COMPLETED'] as const;
const FLOWS: readonly FlowName[] = ['cash-payment', 'transfer-payment', 'mark-paid'];

describe.each(backends)('three organizations through one payhooks, inbox on $name', (backend) => {
  it.skipIf(!backend.available)("each account's handlers read only their own organization's data", { timeout: 120_000 }, async () => {
    const simulator = await startSimulator({ accounts: 3, duplicateRate: 0.2, reorder: true, random: 48, rateLimitPerMinute: 1_000_000 });
    const store = await backend.open();
    let hooks: Payhooks<ApiClient> | undefined;
    const receiver = await listen(createServer((req, res) => void hooks!.node()(req, res)));
    try {
      const organizations = simulator.organizations();
      const accounts = [];
      for (const organization of organizations) {
        const client = createClient({ apiKey: organization.apiKey, environment: simulator.url, rateLimit: false });
        const endpoint = await client.webhooks.create({
          url: `${receiver.url}/webhooks/${organization.id}`,
          description: organization.id,
          enabledEvents: [...HANDLED],
        });
        const { secret } = await client.webhooks.getSecret(endpoint.id);
        accounts.push({ id: organization.id, secret, api: client });
      }
      hooks = createPayhooks({
        accounts,
        database: store,
        logger: silent,
        worker: { pollIntervalMs: 50, concurrency: 8, backoff: { baseMs: 50, maxMs: 500 } },
      });
      const reads: { account: string; eventId: string; id: string }[] = [];
      hooks.on([...HANDLED], async (event, ctx) => {
        const api = ctx.api!;
        // The resource each event is about ('invoice:inv_…'), read with the account's own client: a crossed key would be a 404.
        const [kind, resourceId] = resourceKeyOf(event.eventType, event.data)!.split(':') as [string, string];
        const id =
          kind === 'customer'
            ? (await api.customers.get(resourceId)).id
            : kind === 'payment'
              ? (await api.payments.get(resourceId)).id
              : (await api.invoices.get(resourceId)).id;
        reads.push({ account: ctx.account, eventId: event.eventId, id });
      });
      await hooks.start();

      // Two of each flow per organization, started all at once: the organizations' days interleave.
      const runs = organizations.flatMap((organization) =>
        [...FLOWS, ...FLOWS].map((flow) => runFlow(flow, { baseUrl: simulator.url, apiKey: organization.apiKey })),
      );
      await Promise.all(runs);
      const expected = organizations.flatMap((organization) =>
        organization
          .events()
          .filter((event) => (HANDLED as readonly string[]).includes(event.eventType))
          .map((event) => `${organization.id} ${event.eventId}`),
      );
      expect(expected.length).toBe(3 * 6 + 3 * 6 + 3 * 6);
      await waitFor(
        () => new Set(reads.map((r) => `${r.account} ${r.eventId}`)).size >= expected.length,
        'every handled event read',
        90_000,
      );
      await simulator.idle();

      // Each event was handled under the account it was emitted for, and read a resource of that organization.
      expect([...new Set(reads.map((r) => `${r.account} ${r.eventId}`))].sort()).toEqual([...expected].sort());
      for (const read of reads) expect(simulator.ownerOf(read.id), `${read.account} read ${read.id}`).toBe(read.account);

      // The request log, the worker's reads included: every key only ever touched its own organization's resources.
      const log = simulator.requestLog();
      let checked = 0;
      for (const entry of log) {
        expect(entry.apiKey).toBe(simulator.organization(entry.account).apiKey);
        expect(entry.status, `${entry.method} ${entry.path}`).toBeLessThan(300);
        for (const id of entry.resourceIds) {
          expect(simulator.ownerOf(id), `${entry.account}: ${entry.method} ${entry.path} touched ${id}`).toBe(entry.account);
          checked += 1;
        }
      }
      const handlerReads = log.filter((entry) => entry.method === 'GET' && /^\/v1\/(customers|invoices|payments)\//.test(entry.path));
      for (const organization of organizations) {
        expect(handlerReads.filter((entry) => entry.account === organization.id).length).toBeGreaterThanOrEqual(18);
      }
      expect(checked).toBeGreaterThan(200);
      expect(simulator.deliveryPosts().filter((post) => post.duplicate).length).toBeGreaterThan(0);
    } finally {
      await hooks?.stop();
      await receiver.close();
      await simulator.close();
      await dispose(store);
    }
  });
});
