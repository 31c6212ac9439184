// What the command line says when the database is not the one the user meant: a DATABASE_URL that cannot be used
// (no server, no such database) names DATABASE_URL and doctor; a command without DATABASE_URL that creates the
// embedded database says so, and names the PostgreSQL database a serve in this folder uses. In-process through
// run(), against the real server and the embedded database on disk.
import { existsSync, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import { resolveServiceConfig } from '../../src/service/resolve-service-config.js';
import { startService } from '../../src/service/start-service.js';
import { openDatabase, type PayhooksDatabase } from '../../src/store/database.js';
import { migrate } from '../../src/store/migrate.js';
import { runInProcess } from '../helpers/cli.js';
import { putEvent } from '../helpers/inbox.js';
import { pgUrl, uniqueSchema } from '../helpers/pg.js';
import { seedDefaultDataDir } from '../helpers/pglite-template.js';

/** A loopback port nothing listens on: one the system just gave and took back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as { port: number };
  await new Promise<void>((closed) => server.close(() => closed()));
  return port;
}

/** `url` with a password, which no message may show. */
function withPassword(url: string, password: string): string {
  const parsed = new URL(url);
  parsed.password = password;
  return parsed.href;
}

describe('a DATABASE_URL that cannot be used', () => {
  it('a closed port: exit 1, the refusal kept, DATABASE_URL and doctor named, the password never shown', { timeout: 60_000 }, async () => {
    const url = `postgres://app:hunter2secret@127.0.0.1:${await closedPort()}/billing`;
    const { code, stdout, stderr } = await runInProcess(['events', 'list'], { DATABASE_URL: url });
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain('ECONNREFUSED');
    expect(stderr).toContain(`payhooks: cannot use the PostgreSQL database of DATABASE_URL (postgres://app@127.0.0.1:`);
    expect(stderr).toContain('`payhooks doctor` checks them');
    expect(stderr).not.toContain('hunter2secret');
  });

  it.skipIf(pgUrl === null)(
    "a database that does not exist: exit 1 with the server's words, DATABASE_URL and doctor",
    { timeout: 60_000 },
    async () => {
      const url = new URL(withPassword(pgUrl!, 'hunter2secret'));
      url.pathname = '/payhooks_no_such_database';
      const { code, stderr } = await runInProcess(['events', 'stats'], { DATABASE_URL: url.href });
      expect(code).toBe(1);
      expect(stderr).toContain('database "payhooks_no_such_database" does not exist');
      expect(stderr).toMatch(/cannot use the PostgreSQL database of DATABASE_URL \(postgres:\/\/\S+\/payhooks_no_such_database\)/);
      expect(stderr).toContain('payhooks doctor');
      expect(stderr).not.toContain('hunter2secret');
    },
  );
});

describe.skipIf(pgUrl === null)('events show on the real server', () => {
  const schema = uniqueSchema('show_json');
  let store: PayhooksDatabase;
  beforeAll(async () => {
    store = await openDatabase({ url: pgUrl!, schema });
    await migrate(store);
    await putEvent(store, exampleEvent('INVOICE_PAID', { eventId: 'evt_show_json_1' }));
  });
  afterAll(async () => {
    await store.db.schema.dropSchema(schema).ifExists().cascade().execute();
    await store.close();
  });

  it('takes --json, as every other listing command does, and prints the same JSON as without it', { timeout: 60_000 }, async () => {
    const env = { DATABASE_URL: pgUrl!, PAYHOOKS_SCHEMA: schema };
    const plain = await runInProcess(['events', 'show', 'evt_show_json_1'], env);
    const json = await runInProcess(['events', 'show', 'evt_show_json_1', '--json'], env);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ eventId: 'evt_show_json_1', eventType: 'INVOICE_PAID' });
    expect(json.stdout).toBe(plain.stdout);
  });
});

describe('a command without DATABASE_URL', () => {
  it('says that it just created an empty embedded database, and says nothing the next time', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'payhooks-new-embedded-'));
    const first = await runInProcess(['events', 'list'], { DATABASE_URL: undefined, PAYHOOKS_DATA_DIR: undefined }, dir);
    expect(first.code).toBe(0);
    expect(first.stdout).toBe('no events\n');
    expect(first.stderr).toContain(
      'payhooks: DATABASE_URL is not set, so a new, empty embedded database was created at ./.payhooks/pgdata; if your serve uses PostgreSQL, set DATABASE_URL to read its database.',
    );
    expect(existsSync(join(dir, '.payhooks/pgdata'))).toBe(true);
    const second = await runInProcess(['events', 'list'], { DATABASE_URL: undefined, PAYHOOKS_DATA_DIR: undefined }, dir);
    expect(second.stdout).toBe('no events\n');
    expect(second.stderr).toBe('');
  });

  it.skipIf(pgUrl === null)(
    'names the PostgreSQL database a serve started in this folder uses, without its password',
    {
      timeout: 120_000,
    },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'payhooks-serve-on-pg-'));
      // The embedded database exists already (an earlier try): only the serve's note tells the two apart.
      seedDefaultDataDir(dir);
      const schema = uniqueSchema('serve_marker');
      const config = await resolveServiceConfig({
        env: {
          PAYHOOKS_WEBHOOK_SECRET: 'marker-secret',
          PORT: '0',
          HOST: '127.0.0.1',
          DATABASE_URL: withPassword(pgUrl!, 'hunter2secret'),
          PAYHOOKS_SCHEMA: schema,
          PAYHOOKS_DATA_DIR: join(dir, '.payhooks/pgdata'),
        },
        cwd: dir,
      });
      const service = await startService(config, { logger: pino({ level: 'silent' }), role: 'receiver' });
      try {
        const listed = await runInProcess(['events', 'list'], { DATABASE_URL: undefined, PAYHOOKS_DATA_DIR: undefined }, dir);
        expect(listed.code).toBe(0);
        expect(listed.stdout).toBe('no events\n');
        const shown = new URL(pgUrl!);
        expect(listed.stderr).toContain(
          `uses PostgreSQL at postgres://${shown.username}@${shown.host}${shown.pathname}: set DATABASE_URL to read it`,
        );
        expect(listed.stderr).toContain(`a payhooks serve started in this folder (process ${process.pid}`);
        expect(listed.stderr).not.toContain('hunter2secret');
      } finally {
        await service.close();
        const store = await openDatabase({ url: pgUrl!, schema });
        await store.db.schema.dropSchema(schema).ifExists().cascade().execute();
        await store.close();
      }
    },
  );
});
