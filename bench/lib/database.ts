import pg from 'pg';

/** The PostgreSQL server the bench uses: DATABASE_URL, or the local one. */
export const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** A schema name unique to this bench run and purpose. */
export function benchSchema(purpose: string): string {
  return `bench_${purpose}_${Date.now().toString(36)}`;
}

/** Runs `fn` with a client of its own, closed afterwards. */
export async function withClient<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function dropSchemas(schemas: readonly string[]): Promise<void> {
  await withClient(async (client) => {
    for (const schema of schemas) await client.query(`drop schema if exists "${schema}" cascade`);
  });
}

/** The server's version and the settings that bound write throughput. */
export async function serverFacts(): Promise<string> {
  return withClient(async (client) => {
    const { rows } = await client.query<{ name: string; setting: string }>(
      `select name, current_setting(name) as setting from pg_settings
        where name in ('server_version', 'shared_buffers', 'synchronous_commit', 'max_connections', 'wal_level') order by name`,
    );
    return rows.map((row) => `${row.name}=${row.setting}`).join(', ');
  });
}

/**
 * Starts a measured run from a fresh checkpoint, so that one run does not pay for the WAL of the run before it (at
 * about 4 KB of WAL per event, a 100,000-event run alone fills half of the default max_wal_size). Needs a superuser
 * or pg_checkpoint; without it, runs go on unaligned.
 */
export async function checkpoint(): Promise<void> {
  await withClient((client) => client.query('checkpoint')).catch(() => undefined);
}
