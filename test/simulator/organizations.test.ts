import { createServer, type IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDefaultScheme } from '../../src/signature/index.js';
import { FLOW_NAMES, runFlow, SimulatorOptionError, startSimulator, type Simulator } from '../../src/simulator/index.js';
import { resolveSimulatorOptions } from '../../src/simulator/options.js';
import { errorMessage } from '../helpers/error-body.js';
import { listen } from '../helpers/servers.js';
import { api } from './api.js';

// Several organizations in one simulator: each key sees and changes only its own organization's data, each
// organization's deliveries go to its own endpoint signed with its own secret, and the request log shows it.

interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  /** The raw bytes, as a verifier needs them. */
  body: Buffer;
}

/** One loopback receiver for every organization: it records the path each POST came to. */
async function pathRecorder() {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"received":true}');
    });
  });
  const { url, close } = await listen(server);
  return { url, received, close };
}

describe('the accounts option', () => {
  it('is one organization, default, unless told otherwise; a count gives acct_1…; a list is taken as given', () => {
    expect(resolveSimulatorOptions().accounts).toEqual(['default']);
    expect(resolveSimulatorOptions({ accounts: 1 }).accounts).toEqual(['default']);
    expect(resolveSimulatorOptions({ accounts: 3 }).accounts).toEqual(['acct_1', 'acct_2', 'acct_3']);
    expect(resolveSimulatorOptions({ accounts: ['gym', 'school-2'] }).accounts).toEqual(['gym', 'school-2']);
  });

  it('refuses a bad count, a bad id and a repeated id, naming the problem', () => {
    expect(() => resolveSimulatorOptions({ accounts: 0 })).toThrow(SimulatorOptionError);
    expect(() => resolveSimulatorOptions({ accounts: 2.5 })).toThrow(/accounts must be a whole number from 1 to 1000/);
    expect(() => resolveSimulatorOptions({ accounts: ['Gym'] })).toThrow(/lower-case letters, digits.*not "Gym"/);
    expect(() => resolveSimulatorOptions({ accounts: ['a/b'] })).toThrow(/not "a\/b"/);
    expect(() => resolveSimulatorOptions({ accounts: ['gym', 'gym'] })).toThrow(/unique; repeated: gym/);
    expect(() => resolveSimulatorOptions({ accounts: [] })).toThrow(/1 to 1000 account ids, not 0/);
  });
});

describe('three organizations in one simulator', () => {
  let simulator: Simulator;
  let receiver: Awaited<ReturnType<typeof pathRecorder>>;
  const endpoints = new Map<string, { id: string; secret: string }>();
  const flowsRun = new Map<string, number>();

  beforeAll(async () => {
    receiver = await pathRecorder();
    simulator = await startSimulator({ accounts: 3, timeScale: 1000 });
    for (const organization of simulator.organizations()) {
      const client = api(simulator.url, organization.apiKey);
      const created = await client.post('/v1/webhooks', {
        url: `${receiver.url}/webhooks/${organization.id}`,
        description: organization.id,
        enabledEvents: ['CUSTOMER_CREATED', 'INVOICE_CREATED', 'INVOICE_PAID', 'PAYMENT_COMPLETED', 'PAYMENT_ATTEMPT_SUCCEEDED'],
      });
      expect(created.status).toBe(200);
      const id = (created.body as { id: string }).id;
      const secret = ((await client.get(`/v1/webhooks/${id}/secret`)).body as { secret: string }).secret;
      endpoints.set(organization.id, { id, secret });
    }
    // Interleaved, so that a mix-up between organizations would show: a, b, c, a, b, c.
    for (let round = 0; round < 2; round++) {
      for (const organization of simulator.organizations()) {
        await runFlow('cash-payment', { baseUrl: simulator.url, apiKey: organization.apiKey });
        flowsRun.set(organization.id, (flowsRun.get(organization.id) ?? 0) + 1);
      }
    }
    await simulator.idle();
  });

  afterAll(async () => {
    await simulator?.close();
    await receiver?.close();
  });

  it('gives each organization its own id, key and name', () => {
    const organizations = simulator.organizations();
    expect(organizations.map((o) => o.id)).toEqual(['acct_1', 'acct_2', 'acct_3']);
    expect(new Set(organizations.map((o) => o.apiKey)).size).toBe(3);
    for (const o of organizations) expect(o.apiKey).toMatch(new RegExp(`^sk_test_${o.id}_[A-Za-z0-9_-]{16}$`));
    expect(new Set(organizations.map((o) => o.name)).size).toBe(3);
    expect(simulator.options.accounts).toEqual(['acct_1', 'acct_2', 'acct_3']);
    expect(() => simulator.organization('acct_9')).toThrow(/No organization "acct_9": this simulator has acct_1, acct_2, acct_3/);
  });

  it('keeps each organization its own records, and lists only those to its key', async () => {
    for (const organization of simulator.organizations()) {
      const records = organization.records();
      expect(records.customers).toHaveLength(2);
      expect(records.invoices).toHaveLength(2);
      expect(records.payments).toHaveLength(2);
      const listed = await api(simulator.url, organization.apiKey).get('/v1/customers?take=100');
      expect(listed.status).toBe(200);
      expect((listed.body as { data: { id: string }[] }).data.map((c) => c.id)).toEqual(records.customers.map((c) => c.id));
      const endpointList = await api(simulator.url, organization.apiKey).get('/v1/webhooks');
      expect((endpointList.body as { data: { id: string }[] }).data.map((e) => e.id)).toEqual([endpoints.get(organization.id)!.id]);
    }
    // The first organization is the simulator's default view.
    expect(simulator.records()).toEqual(simulator.organization('acct_1').records());
  });

  it("answers another organization's id with the 404 of an id that does not exist", async () => {
    const [a, b] = simulator.organizations();
    const asA = api(simulator.url, a!.apiKey);
    const bRecords = b!.records();
    const foreign = [
      ['GET', `/v1/customers/${bRecords.customers[0]!.id}`, 'cus_doesnotexist'],
      ['GET', `/v1/invoices/${bRecords.invoices[0]!.id}`, 'inv_doesnotexist'],
      ['GET', `/v1/payments/${bRecords.payments[0]!.id}`, 'pay_doesnotexist'],
      ['GET', `/v1/webhooks/${endpoints.get(b!.id)!.id}/secret`, 'we_doesnotexist'],
      ['POST', `/v1/invoices/${bRecords.invoices[0]!.id}/mark-paid`, 'inv_doesnotexist'],
    ] as const;
    for (const [method, path, unknownId] of foreign) {
      const answer = await asA.call(method, path);
      const unknown = await asA.call(method, path.replace(/(cus|inv|pay|we)_[A-Za-z0-9_-]+/, unknownId));
      expect(answer.status, path).toBe(404);
      expect(unknown.status, path).toBe(404);
      // The same words but the id: nothing tells "someone else's" from "nobody's".
      expect(errorMessage(answer.body).replace(/\S+_\S+/g, 'ID')).toBe(errorMessage(unknown.body).replace(/\S+_\S+/g, 'ID'));
    }
    // Another organization's delivery record cannot be listed or retried either.
    const bRecord = b!.webhookEvents()[0]!;
    expect((await asA.post(`/v1/webhook-events/${bRecord.id}/retry`)).status).toBe(404);
    const aHistory = (await asA.get('/v1/webhook-events?take=100')).body as { data: { endpointId: string }[]; total: number };
    expect(aHistory.total).toBe(a!.webhookEvents().length);
    expect(aHistory.data.every((record) => record.endpointId === endpoints.get(a!.id)!.id)).toBe(true);
    // B's invoice was not paid by A's call.
    expect(b!.records().invoices[0]!.isPaid).toBe(bRecords.invoices[0]!.isPaid);
  });

  it('refuses a key no organization has, the single-organization key included, with one 401', async () => {
    for (const key of ['sk_test_local', 'sk_test_acct_1_wrong', 'sk_live_other']) {
      const answer = await api(simulator.url, key).get('/v1/customers');
      expect(answer.status, key).toBe(401);
      expect(errorMessage(answer.body)).toMatch(/one of the organizations' keys/);
    }
  });

  it('shares one clock, and keeps snapshots and restore to one organization', async () => {
    expect(() => simulator.snapshot()).toThrow(/A snapshot holds one organization; this simulator runs 3/);
    const single = await startSimulator();
    try {
      await expect(startSimulator({ accounts: 2, restore: single.snapshot() })).rejects.toThrow(
        /restore takes a snapshot of one organization; accounts gives 2/,
      );
    } finally {
      await single.close();
    }
  });

  it("takes an organization's sk_live_ twin as its production key: its data, and the sandbox refused", async () => {
    const c = simulator.organization('acct_3');
    const live = api(simulator.url, c.apiKey.replace(/^sk_test_/, 'sk_live_'));
    const listed = await live.get('/v1/customers?take=100');
    expect((listed.body as { data: { id: string }[] }).data.map((x) => x.id)).toEqual(c.records().customers.map((x) => x.id));
    expect((await live.get('/v1/sandbox/events')).status).toBe(403);
  });

  it('keeps idempotency keys per organization: the same key in two organizations makes two customers', async () => {
    const [a, b] = simulator.organizations();
    const headers = { 'x-idempotency-key': 'same-key-everywhere' };
    const input = { name: 'Twin', username: 'twin-user' };
    const first = await api(simulator.url, a!.apiKey).post('/v1/customers', input, headers);
    const second = await api(simulator.url, b!.apiKey).post('/v1/customers', input, headers);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBeNull();
    expect((second.body as { id: string }).id).not.toBe((first.body as { id: string }).id);
    expect(simulator.ownerOf((second.body as { id: string }).id)).toBe(b!.id);
  });

  it("delivers each organization's events to its own endpoint, signed with its own secret only", async () => {
    await simulator.idle();
    const organizations = simulator.organizations();
    // Every event went out once (all its types are subscribed): two flows of five each, and what the tests above caused.
    expect(receiver.received.length).toBe(simulator.events().length);
    for (const organization of organizations) {
      const own = receiver.received.filter((r) => r.path === `/webhooks/${organization.id}`);
      const emitted = organization.events().map((event) => event.eventId);
      expect(own.map((r) => JSON.parse(r.body.toString('utf8')).eventId as string).sort()).toEqual([...emitted].sort());
      expect(own.length).toBeGreaterThanOrEqual(10);
      const mine = createDefaultScheme({ secrets: [endpoints.get(organization.id)!.secret] });
      for (const other of organizations) {
        const scheme = createDefaultScheme({ secrets: [endpoints.get(other.id)!.secret] });
        for (const delivery of own) {
          const verify = () => scheme.verify({ headers: delivery.headers, rawBody: delivery.body });
          if (other.id === organization.id) expect(verify).not.toThrow();
          else expect(verify).toThrow(/signature/i);
        }
      }
      expect(() => mine.verify({ headers: own[0]!.headers, rawBody: own[0]!.body })).not.toThrow();
    }
  });

  it("records in the request log that each key touched only its own organization's resources", () => {
    const log = simulator.requestLog();
    const organizations = simulator.organizations();
    const checkedPerAccount = new Map<string, number>();
    let foreignRefused = 0;
    for (const entry of log) {
      expect(entry.apiKey.replace(/^sk_live_/, 'sk_test_')).toBe(simulator.organization(entry.account).apiKey);
      const ok = entry.status >= 200 && entry.status < 300;
      for (const id of entry.resourceIds) {
        const owner = simulator.ownerOf(id);
        if (ok) {
          expect(owner, `${entry.method} ${entry.path}: ${id}`).toBe(entry.account);
          checkedPerAccount.set(entry.account, (checkedPerAccount.get(entry.account) ?? 0) + 1);
        } else if (owner !== undefined && owner !== entry.account) {
          expect(entry.status).toBe(404);
          foreignRefused += 1;
        }
      }
    }
    // Not vacuous: every organization's key touched many of its own resources, and the foreign reads were logged.
    for (const organization of organizations) expect(checkedPerAccount.get(organization.id) ?? 0).toBeGreaterThan(20);
    expect(foreignRefused).toBeGreaterThanOrEqual(6);
    // Every flow call is there: a cash-payment is 6 calls (customer, invoice, payment, completion, 2 reads of events).
    expect(log.filter((entry) => entry.account === 'acct_2').length).toBeGreaterThanOrEqual(2 * 5);
    expect(flowsRun.get('acct_2')).toBe(2);
  });
});

describe('one organization (the default)', () => {
  it('accepts any sk_test_ key as before and logs its calls under default', async () => {
    const simulator = await startSimulator();
    try {
      expect(simulator.organizations().map((o) => [o.id, o.apiKey])).toEqual([['default', 'sk_test_local']]);
      for (const key of ['sk_test_local', 'sk_test_anything', 'sk_test_simulator']) {
        expect((await api(simulator.url, key).get('/v1/customers')).status).toBe(200);
      }
      await runFlow(FLOW_NAMES[0], { baseUrl: simulator.url });
      const log = simulator.requestLog();
      expect(log.length).toBeGreaterThan(3);
      expect(new Set(log.map((entry) => entry.account))).toEqual(new Set(['default']));
      expect(simulator.records().customers).toHaveLength(1);
      expect(simulator.ownerOf(simulator.records().customers[0]!.id)).toBe('default');
      expect(simulator.ownerOf('cus_nobody')).toBeUndefined();
    } finally {
      await simulator.close();
    }
  });
});
