// `payhooks/service` as an app uses it: the standalone service run inside the app's own process, from the environment
// alone, on the embedded database; the simulator delivers a real signed webhook, and the app's handler runs.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createClient } from 'payhooks/client';
import { resolveServiceConfig, ServiceConfigError, startService } from 'payhooks/service';
import { startSimulator } from 'payhooks/simulator';
import { freePort } from '../helpers/servers.js';
import { waitFor } from '../helpers/wait.js';

const silent = pino({ level: 'silent' });

describe('payhooks/service in an app process', () => {
  it('startService(await resolveServiceConfig({ env })) receives a signed delivery and runs the handler', {
    timeout: 120_000,
  }, async () => {
    const simulator = await startSimulator({ logger: silent });
    const apiKey = 'sk_test_service_library';
    try {
      const port = await freePort();
      const api = createClient({ apiKey, environment: simulator.url, rateLimit: false });
      const endpoint = await api.webhooks.create({
        url: `http://127.0.0.1:${port}/webhooks`,
        description: 'the app process',
        enabledEvents: ['CUSTOMER_CREATED'],
      });
      const { secret } = await api.webhooks.getSecret(endpoint.id);
      const env = {
        PAYHOOKS_WEBHOOK_SECRET: secret,
        PAYHOOKS_DATA_DIR: 'memory://',
        PORT: String(port),
        HOST: '127.0.0.1',
        PAYHOOKS_API_KEY: apiKey,
        PAYHOOKS_API_URL: simulator.url,
        PAYHOOKS_WORKER_CONCURRENCY: '2',
      };
      const config = await resolveServiceConfig({ env, simulatorSession: false });
      expect(config).toMatchObject({
        role: 'all',
        receiver: { host: '127.0.0.1', port, secrets: [secret] },
        database: { dataDir: 'memory://', schema: 'payhooks' },
        worker: { concurrency: 2, maxAttempts: 10 },
        api: { key: apiKey, url: simulator.url },
      });

      const seen: { eventId: string; customerId: string; withApi: boolean }[] = [];
      const service = await startService(config, {
        logger: silent,
        register: (hooks) => {
          hooks.on('CUSTOMER_CREATED', (event, ctx) => {
            seen.push({ eventId: event.eventId, customerId: event.data.id, withApi: ctx.api !== undefined });
          });
        },
      });
      try {
        expect(service.url).toBe(`http://127.0.0.1:${port}`);
        const customer = await api.customers.create({ username: 'ana-service', name: 'Ana', email: 'ana@example.com' });
        await waitFor(() => seen.length === 1, 'the handler to run', 60_000);
        expect(seen[0]).toMatchObject({ customerId: customer.id, withApi: true });
        expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
        const stored = await service.hooks.ready();
        expect(stored.kind).toBe('pglite');
      } finally {
        await service.close();
      }
    } finally {
      await simulator.close();
    }
  });

  it('refuses a bad configuration before opening anything, naming each bad value', async () => {
    const refused = await resolveServiceConfig({
      env: { PORT: 'eighty', PAYHOOKS_ADMIN_TOKEN: 'short', PAYHOOKS_API_KEY: 'sk_test_x' },
      simulatorSession: false,
    }).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ServiceConfigError);
    const problems = (refused as ServiceConfigError).problems.map((p) => p.key);
    expect(problems).toEqual(['PORT', 'PAYHOOKS_WEBHOOK_SECRET', 'PAYHOOKS_ADMIN_TOKEN', 'PAYHOOKS_API_URL']);
    expect((refused as Error).message).toContain('PORT must be a number from 0 to 65535 (0: any free port), not "eighty"');
    expect((refused as Error).message).toContain('PAYHOOKS_ADMIN_TOKEN is too weak: it has 5 characters');
  });
});
