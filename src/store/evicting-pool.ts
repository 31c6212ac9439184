import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';
import { within } from '../internal/within.js';
import { isPreparedStatementMismatch, preparedName } from './prepared-statements.js';

/** What a query or a wait for a connection rejects with once the deadline of {@link EvictingPool.until} has passed. */
export class DeadlineExceededError extends Error {
  constructor(what: string) {
    super(`${what}: the deadline passed`);
    this.name = 'DeadlineExceededError';
  }
}

/**
 * A pg pool for Kysely that does not hand out connections that stopped answering.
 *
 * When the database goes silent without closing its sockets (a partition, a firewall dropping packets), every
 * pooled connection is dead, but nothing says so: each query waits for its timeout, and a connection whose
 * query timed out still has that query running, so the next query on it waits behind it. Here a connection
 * whose query failed at the connection level (a timeout, a reset) is destroyed instead of returned to the
 * pool, and such a failure condemns every connection opened before that query was sent (those opened since
 * have answered since), as {@link EvictingPool.discardAll} condemns every connection open when it is called:
 * each is destroyed the next time it would be handed out. Once the database answers again, the queries after
 * the first failure run on new connections, so service comes back within a connection's set-up time.
 *
 * It also sends the statements marked `PREPARED` as named prepared statements, and sends them unprepared from the first
 * one a pooler in between made fail (which it sends again, unprepared: it had not run).
 *
 * With several hosts (a primary and its standbys), a connection that cannot be made is tried again, up to
 * `connectAttempts` times in all, each on the next host (the pool's `Client` picks it: see failover-client.ts), and a
 * statement refused because the server no longer takes writes (SQLSTATE 25006, a demoted primary) condemns the
 * connections as a connection failure does; `onConnectionFailure` hears of each such connection, so that the next ones
 * go elsewhere.
 */
export class EvictingPool implements PostgresPool {
  readonly #pool: pg.Pool;
  /** Connections opened before this `performance.now()` time are not handed out again. */
  #condemnedBefore = Number.NEGATIVE_INFINITY;
  readonly #bornAt = new WeakMap<pg.PoolClient, number>();
  /**
   * Whether statements opened by `PREPARED` are prepared (see prepared-statements.ts): until the server says a
   * connection's prepared statements are not its own, as behind a transaction pooler.
   */
  #preparing = true;

  readonly #connectAttempts: number;
  readonly #onConnectionFailure: (client: pg.PoolClient) => void;

  constructor(pool: pg.Pool, options: EvictingPoolOptions = {}) {
    this.#pool = pool;
    this.#connectAttempts = Math.max(1, options.connectAttempts ?? 1);
    this.#onConnectionFailure = options.onConnectionFailure ?? (() => undefined);
    pool.on('connect', (client) => this.#bornAt.set(client, performance.now()));
  }

  /** Condemns every connection open now: in use ones are destroyed when released, idle ones when next taken. */
  discardAll(): void {
    this.#condemnedBefore = performance.now();
  }

  connect(): Promise<PostgresPoolClient> {
    return this.#connect(undefined);
  }

  /**
   * A view of this pool with a deadline (a `performance.now()` time) on every connection taken through it and every
   * query sent on one: waiting for a connection stops at the deadline, a query is not sent past it, and a query still
   * unanswered at the deadline fails as a query timeout does (its connection is destroyed, which frees its place in
   * the pool at once). For work whose result is useless past a point, such as a batch of deliveries whose senders
   * have all been answered 503. Ending the view ends nothing: the connections are this pool's.
   *
   * The deadline travels with the view rather than with the async context: an AsyncLocalStorage makes Node (20) run a
   * hook on every promise of the process while any work runs under it, which the receiver, always storing a batch,
   * paid on every request (about 7% of its CPU per delivery, measured).
   *
   * @example
   * const db = new Kysely({ dialect: new PostgresDialect({ pool: pool.until(performance.now() + 5000) }) });
   */
  until(deadline: number): PostgresPool {
    return { connect: () => this.#connect(deadline), end: async () => undefined };
  }

  async #connect(deadline: number | undefined): Promise<PostgresPoolClient> {
    for (let attempt = 1; ; ) {
      let client: pg.PoolClient;
      try {
        client = deadline === undefined ? await this.#pool.connect() : await this.#connectBefore(deadline);
      } catch (error) {
        // Another host may be the primary now: the failed connection moved the rotation on.
        if (attempt >= this.#connectAttempts || error instanceof DeadlineExceededError) throw error;
        attempt += 1;
        continue;
      }
      if ((this.#bornAt.get(client) ?? Number.NEGATIVE_INFINITY) >= this.#condemnedBefore) return this.#wrap(client, deadline);
      client.release(new Error('discarded: opened before the database stopped answering'));
    }
  }

  end(): Promise<void> {
    return this.#pool.end();
  }

  /** A connection from the pool, unless the deadline comes first; one that arrives after it goes straight back. */
  async #connectBefore(deadline: number): Promise<pg.PoolClient> {
    const remaining = deadline - performance.now();
    if (remaining <= 0) throw new DeadlineExceededError('waiting for a database connection');
    const taking = this.#pool.connect();
    const taken = await within(taking, remaining);
    if (taken !== 'timeout') return taken;
    taking.then(
      (client) => client.release(),
      () => undefined,
    );
    throw new DeadlineExceededError('waiting for a database connection');
  }

  #wrap(client: pg.PoolClient, deadline: number | undefined): PostgresPoolClient {
    let broken = false;
    const fail = (sentAt: number) => (error: unknown) => {
      if (isConnectionFailure(error) || isReadOnlyRefusal(error)) {
        broken = true;
        this.#condemnedBefore = Math.max(this.#condemnedBefore, sentAt);
        this.#onConnectionFailure(client);
      }
      throw error;
    };
    const wrapped = {
      query: (...args: unknown[]): unknown => {
        const sentAt = performance.now();
        let name: string | undefined;
        if (typeof args[0] === 'string') {
          name = this.#preparing ? preparedName(args[0]) : undefined;
          let queryTimeout: number | undefined;
          if (deadline !== undefined) {
            queryTimeout = Math.ceil(deadline - sentAt);
            if (queryTimeout <= 0) return Promise.reject(new DeadlineExceededError('sending a query'));
          }
          if (name !== undefined || queryTimeout !== undefined)
            args = [{ text: args[0], values: args[1], name, query_timeout: queryTimeout }];
        }
        const result = (client.query as (...a: unknown[]) => unknown)(...args);
        // A cursor (streaming) is returned as it is; its reads fail on their own.
        if (!(result instanceof Promise)) return result;
        if (name === undefined) return result.catch(fail(sentAt));
        return result.catch((error: unknown) => {
          if (!isPreparedStatementMismatch(error)) return fail(sentAt)(error);
          // Behind a pooler that moves sessions between server connections, statements are sent unprepared from now on.
          this.#preparing = false;
          const { name: _name, ...unnamed } = args[0] as { name?: string };
          return (client.query as (config: unknown) => Promise<unknown>)(unnamed).catch(fail(sentAt));
        });
      },
      release(): void {
        client.release(broken ? new Error('discarded: its query failed at the connection level') : undefined);
      },
    };
    return wrapped as PostgresPoolClient;
  }
}

/** Options of {@link EvictingPool}. */
export interface EvictingPoolOptions {
  /** How many times in all a connection is tried before the failure is passed on: the number of hosts. Default 1. */
  connectAttempts?: number | undefined;
  /** Told of each connection whose statement failed at the connection level or was refused as a write on a read-only server. */
  onConnectionFailure?: ((client: pg.PoolClient) => void) | undefined;
}

/**
 * A write refused by a server that does not take writes (SQLSTATE 25006 read_only_sql_transaction): a primary demoted
 * under the connection (a switchover), or a standby. Its connections are no use for writing again.
 */
function isReadOnlyRefusal(error: unknown): boolean {
  return (error as { code?: unknown } | undefined)?.code === '25006';
}

/**
 * SQLSTATEs of a server that ends the session: class 08 (connection exception) and the shutdowns of class 57
 * (57P01 admin_shutdown, as `pg_terminate_backend` or a failover sends it; 57P02 crash_shutdown; 57P03
 * cannot_connect_now). The server closes the connection after sending one.
 */
const SESSION_ENDED = /^(08...|57P0[123])$/;

/**
 * A failure of the connection rather than of the statement: the connection cannot be trusted again. A server's
 * "terminating connection" (57P01) counts: the socket closes a moment after the error arrives, and a connection handed
 * back before that was handed out again, dead ("Connection terminated unexpectedly" on the next statement).
 *
 * @example
 * isConnectionFailure({ code: '57P01', message: 'terminating connection due to administrator command' }) // true
 * isConnectionFailure({ code: '23505', message: 'duplicate key value violates unique constraint' }) // false
 */
function isConnectionFailure(error: unknown): boolean {
  const { message, code } = (error ?? {}) as { message?: unknown; code?: unknown };
  return (
    message === 'Query read timeout' ||
    (typeof message === 'string' && /Connection terminated|connection is closed/i.test(message)) ||
    code === 'ECONNRESET' ||
    code === 'EPIPE' ||
    code === 'ETIMEDOUT' ||
    (typeof code === 'string' && SESSION_ENDED.test(code))
  );
}
