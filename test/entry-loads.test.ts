// Which packages each entry loads (issue 23, item 4): an app that imports `payhooks` for a receiver and a handler
// must not load the RabbitMQ and NATS clients, which only a broker sink uses, and one that imports the API client
// must not load the database layer (kysely). Checked in child processes that record every ES module they load
// (test/helpers/record-module-loads.mjs), from the sources, since the package's own entries resolve to dist/. Each
// test also shows that the recording sees the package once something does need it, so that "not loaded" is not
// merely "not seen".
import { describe, expect, it } from 'vitest';
import { packagesLoadedBy } from './helpers/module-loads.js';

const brokerClients = (packages: string[]) =>
  packages.filter((name) => name === 'amqplib' || name.startsWith('@nats-io/') || name.startsWith('@redis/'));

// A publish to a port nothing listens on: it fails at connect, after the publisher has loaded its client.
const publishOnce = `
  const publishOnce = async (publisher) => {
    const message = { eventId: 'evt_1', eventType: 'INVOICE_PAID', body: Buffer.from('{}') };
    const failure = await publisher.publish(message, AbortSignal.timeout(10_000)).then(() => 'published', (err) => err.message);
    await publisher.close();
    return failure;
  };
`;

describe('import of payhooks and payhooks/sync', () => {
  it.each([
    ['payhooks', './src/index.ts'],
    ['payhooks/sync', './src/sync/index.ts'],
  ])('%s loads neither amqplib nor @nats-io/*; a broker publisher loads its client when it first opens', async (_entry, source) => {
    const marks = await packagesLoadedBy(`
      ${publishOnce}
      const entry = await import('${source}');
      mark('imported');
      entry.rabbitMqPublisher({ url: 'amqp://guest:guest@127.0.0.1:1' });
      entry.natsPublisher({ servers: 'nats://127.0.0.1:1' });
      mark('made');
      await publishOnce(entry.rabbitMqPublisher({ url: 'amqp://guest:guest@127.0.0.1:1' }));
      mark('rabbitmq');
      await publishOnce(entry.natsPublisher({ servers: 'nats://127.0.0.1:1' }));
      mark('nats');
    `);
    // The entry itself, and publishers that never publish (a configuration that names brokers), load no client.
    expect(marks.imported).toContain('zod');
    expect(brokerClients(marks.imported!)).toEqual([]);
    expect(brokerClients(marks.made!)).toEqual([]);
    // Opened: the RabbitMQ client, then the NATS client, are loaded (and seen being loaded).
    expect(brokerClients(marks.rabbitmq!)).toEqual(['amqplib']);
    expect(brokerClients(marks.nats!)).toEqual(expect.arrayContaining(['amqplib', '@nats-io/jetstream', '@nats-io/transport-node']));
  });
});

describe('the Redis Streams sink', () => {
  it('loads @redis/client only when it first publishes, not when payhooks/sync is imported or the sink is made', async () => {
    const marks = await packagesLoadedBy(`
      const entry = await import('./src/sync/index.ts');
      mark('imported');
      const kind = entry.SINK_KINDS.find((k) => k.kind === 'redis-streams');
      const sink = await kind.create(kind.schema.parse({ url: 'redis://127.0.0.1:1' }), {});
      mark('made');
      const event = { eventId: 'evt_1', eventType: 'INVOICE_PAID', data: {} };
      await sink.handle(event, { signal: AbortSignal.timeout(10_000), receivedAt: new Date() }, async () => null).catch(() => undefined);
      await sink.close();
      mark('published');
    `);
    expect(brokerClients(marks.imported!)).toEqual([]);
    expect(brokerClients(marks.made!)).toEqual([]);
    expect(brokerClients(marks.published!)).toEqual(['@redis/client']);
  });
});

describe('import of payhooks/client', () => {
  it('does not load kysely (the database layer); the root entry, which holds the store, does', async () => {
    const marks = await packagesLoadedBy(`
      const client = await import('./src/client/index.ts');
      client.createClient({ apiKey: 'sk_test_x', baseUrl: 'http://127.0.0.1:1' });
      mark('client');
      await import('./src/index.ts');
      mark('root');
    `);
    expect(marks.client).toContain('zod');
    expect(marks.client).not.toContain('kysely');
    expect(brokerClients(marks.client!)).toEqual([]);
    expect(marks.root).toContain('kysely');
  });
});

describe('the OpenTelemetry SDK (issue 28)', () => {
  it('is loaded by no entry, nor by serve with tracing off; serve with tracing on loads it', async () => {
    const marks = await packagesLoadedBy(`
      await import('./src/index.ts');
      await import('./src/sync/index.ts');
      await import('./src/service/index.ts');
      mark('imported');
      const { startTracing } = await import('./src/service/start-tracing.ts');
      const logger = { info() {}, warn() {} };
      await startTracing({ exporters: [] }, { role: 'all', logger });
      mark('off');
      const tracing = await startTracing({ exporters: ['console'] }, { role: 'all', logger });
      mark('on');
      await tracing.shutdown();
    `);
    // The API itself is no SDK: every call through it is a no-op until an SDK registers.
    const sdk = (packages: string[]) => packages.filter((name) => name.startsWith('@opentelemetry/') && name !== '@opentelemetry/api');
    expect(sdk(marks.imported!)).toEqual([]);
    expect(sdk(marks.off!)).toEqual([]);
    expect(sdk(marks.on!)).toEqual(expect.arrayContaining(['@opentelemetry/sdk-trace-node', '@opentelemetry/resources']));
    // The OTLP exporter only for otlp.
    expect(sdk(marks.on!)).not.toContain('@opentelemetry/exporter-trace-otlp-http');
  });
});
