import { connect } from 'node:net';
import type { TestProject } from 'vitest/node';
import pg from 'pg';
import { buildPGliteTemplates, type PGliteTemplates } from './helpers/pglite-template.js';

/** The real-server suites use TEST_DATABASE_URL, or the machine's local server. */
const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

async function reachable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:port within a second. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** The brokers the sink suites publish to, on their standard ports. */
const BROKERS = {
  rabbitmq: { name: 'RabbitMQ', port: 5672 },
  nats: { name: 'NATS with JetStream', port: 4222 },
  redis: { name: 'Redis', port: 6379 },
} as const;

declare module 'vitest' {
  export interface ProvidedContext {
    pgUrl: string | null;
    brokers: { rabbitmq: boolean; nats: boolean; redis: boolean };
    pgliteTemplates: PGliteTemplates;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  const ok = await reachable();
  if (!ok && process.env.CI) {
    throw new Error(`CI needs a PostgreSQL server for the real-server suites, and none answered at ${url}`);
  }
  if (!ok) {
    console.warn(`\n[payhooks tests] No PostgreSQL server at ${url}: the real-server suites are SKIPPED; PGlite suites still run.\n`);
  }
  project.provide('pgUrl', ok ? url : null);

  const brokers = {
    rabbitmq: await listening(BROKERS.rabbitmq.port),
    nats: await listening(BROKERS.nats.port),
    redis: await listening(BROKERS.redis.port),
  };
  for (const [key, { name, port }] of Object.entries(BROKERS)) {
    if (brokers[key as keyof typeof brokers]) continue;
    if (process.env.CI) throw new Error(`CI needs ${name} for the broker sink suites, and nothing answered on 127.0.0.1:${port}`);
    console.warn(`\n[payhooks tests] No ${name} on 127.0.0.1:${port}: its broker sink suite is SKIPPED.\n`);
  }
  project.provide('brokers', brokers);
  project.provide('pgliteTemplates', await buildPGliteTemplates());
}
