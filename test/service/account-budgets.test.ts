// Each account's API client takes from a rate budget of its own (issue 48, docs/accounts.md): one account's spent
// budget leaves another's requests going.
import { afterEach, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { createLogger } from '../../src/logger.js';
import { defineServiceConfig } from '../../src/service/service-config.js';
import { bindAccountBudgets, serviceAccounts } from '../../src/service/service-accounts.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { type ApiServer, startApiServer } from '../helpers/api-server.js';
import { backends, dispose } from '../helpers/stores.js';

const pglite = backends.find((backend) => backend.name === 'pglite')!;

describe('rate budgets per account', () => {
  let store: PayhooksDatabase | undefined;
  let server: ApiServer | undefined;
  afterEach(async () => {
    if (store) await dispose(store);
    await server?.close();
    store = undefined;
    server = undefined;
  });

  it("one account's spent budget does not hold back another account's requests", async () => {
    server = await startApiServer();
    const customer = exampleEvent('CUSTOMER_UPDATED').data;
    server.route('GET', '/v1/customers/:id', { json: customer });
    const config = defineServiceConfig({
      accounts: [
        // Two requests an hour: the third waits for the next window.
        {
          id: 'north',
          secrets: ['whsec_north_0123456789'],
          apiKey: 'sk_north_0123456789',
          apiUrl: server.url,
          rateBudget: { requestsPerWindow: 2, windowMs: 3_600_000 },
        },
        { id: 'south', secrets: ['whsec_south_0123456789'], apiKey: 'sk_south_0123456789', apiUrl: server.url },
      ],
    });
    const accounts = serviceAccounts(config, { logger: createLogger({ level: 'silent' }) });
    store = await pglite.open();
    bindAccountBudgets(accounts, store);
    const [north, south] = accounts.map((account) => account.client!.api);

    await north!.customers.get('cus_1');
    await north!.customers.get('cus_1');
    const waiting = new AbortController();
    const third = north!.customers.get('cus_1', { signal: waiting.signal });
    let thirdSettled = false;
    const settle = () => {
      thirdSettled = true;
    };
    third.then(settle, settle);
    for (let i = 0; i < 5; i++) await south!.customers.get('cus_1');
    // South's five went while north's third waited for its window all along.
    expect(thirdSettled).toBe(false);
    waiting.abort();
    await expect(third).rejects.toThrow();

    const byKey = (key: string) => server!.requests.filter((r) => r.headers.authorization === `Bearer ${key}`).length;
    expect(byKey('sk_north_0123456789')).toBe(2);
    expect(byKey('sk_south_0123456789')).toBe(5);
    // Two budgets, named by the accounts.
    const budgets = await store.db
      .selectFrom('api_rate_budget' as never)
      .select('budget' as never)
      .execute();
    expect([...new Set(budgets.map((row) => (row as { budget: string }).budget))].sort()).toEqual(['north', 'south']);
  });
});
