import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';

/**
 * A pg pool for Kysely that does not hand out connections that stopped answering.
 *
 * When the database goes silent without closing its sockets (a partition, a firewall dropping packets), every
 * pooled connection is dead, but nothing says so: each query waits for its timeout, and a connection whose
 * query timed out still has that query running, so the next query on it waits behind it. Here a connection
 * whose query failed at the connection level (a timeout, a reset) is destroyed instead of returned to the
 * pool, and such a failure, or {@link EvictingPool.discardAll}, also condemns every connection opened before
 * it: each is destroyed the next time it would be handed out. Once the database answers again, the queries
 * after the first failure run on new connections, so service comes back within a connection's set-up time.
 */
export class EvictingPool implements PostgresPool {
  readonly #pool: pg.Pool;
  #generation = 0;
  readonly #bornIn = new WeakMap<pg.PoolClient, number>();

  constructor(pool: pg.Pool) {
    this.#pool = pool;
    pool.on('connect', (client) => this.#bornIn.set(client, this.#generation));
  }

  /** Condemns every connection open now: in use ones are destroyed when released, idle ones when next taken. */
  discardAll(): void {
    this.#generation++;
  }

  async connect(): Promise<PostgresPoolClient> {
    for (;;) {
      const client = await this.#pool.connect();
      if ((this.#bornIn.get(client) ?? -1) >= this.#generation) return this.#wrap(client);
      client.release(new Error('discarded: opened before the database stopped answering'));
    }
  }

  end(): Promise<void> {
    return this.#pool.end();
  }

  #wrap(client: pg.PoolClient): PostgresPoolClient {
    let broken = false;
    const fail = (error: unknown): never => {
      if (isConnectionFailure(error)) {
        broken = true;
        this.discardAll();
      }
      throw error;
    };
    const wrapped = {
      query(...args: unknown[]): unknown {
        const result = (client.query as (...a: unknown[]) => unknown)(...args);
        // A cursor (streaming) is returned as it is; its reads fail on their own.
        return result instanceof Promise ? result.catch(fail) : result;
      },
      release(): void {
        client.release(broken ? new Error('discarded: its query failed at the connection level') : undefined);
      },
    };
    return wrapped as PostgresPoolClient;
  }
}

/** A failure of the connection rather than of the statement: the connection cannot be trusted again. */
function isConnectionFailure(error: unknown): boolean {
  const { message, code } = error as { message?: unknown; code?: unknown };
  return (
    message === 'Query read timeout' ||
    (typeof message === 'string' && /Connection terminated|connection is closed/i.test(message)) ||
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    code === 'ETIMEDOUT'
  );
}
