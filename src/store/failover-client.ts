import pg from 'pg';
import type { DatabaseHost, TargetSessionAttrs } from './connection-hosts.js';

/** What a new connection rejects with when its server does not take writes and the connection string asked for one that does. */
export class NotPrimaryError extends Error {
  /** SQLSTATE 25006 (read_only_sql_transaction), as a write on that server would fail: callers that know it treat it alike. */
  readonly code = '25006';
  constructor(host: DatabaseHost) {
    super(
      `${host.host}:${host.port} does not accept writes (a standby, or a primary being demoted), and target_session_attrs=read-write asks for the primary`,
    );
    this.name = 'NotPrimaryError';
  }
}

/**
 * Which of a connection string's hosts the next connection goes to: the one that last worked, until a connection to it
 * fails or finds it is not the primary; then the next in the list, round and round. One instance per database handle,
 * shared by its pool and its LISTEN connection, so that what one learns of a failover the others use at once.
 */
export class HostRotation {
  readonly hosts: readonly DatabaseHost[];
  #index = 0;

  constructor(hosts: readonly DatabaseHost[]) {
    if (hosts.length === 0) throw new TypeError('a host rotation needs at least one host');
    this.hosts = hosts;
  }

  /** The host the next connection tries. */
  current(): DatabaseHost {
    return this.hosts[this.#index] as DatabaseHost;
  }

  /**
   * A connection to `host` failed, was ended by the server, or found a server that does not take writes: the next
   * connection tries the host after it. Several connections failing on one host move the rotation on once, not once each.
   */
  failed(host: { host: string; port: number }): void {
    const current = this.current();
    if (current.host === host.host && current.port === host.port) this.#index = (this.#index + 1) % this.hosts.length;
  }
}

/**
 * A pg `Client` class whose connections go to the host the rotation names (node-postgres reads one host only) and,
 * for `read-write`, check that the server accepts writes (`SHOW transaction_read_only`, as libpq does) before they are
 * used. A connection that fails either way moves the rotation on and rejects: the pool's caller tries again, on the
 * next host (see {@link EvictingPool}'s `connectAttempts`).
 *
 * @example
 * const pool = new pg.Pool({ connectionString, Client: failoverClient(new HostRotation(hosts), 'read-write') });
 */
export function failoverClient(rotation: HostRotation, target: TargetSessionAttrs): typeof pg.Client {
  class FailoverClient extends pg.Client {
    override connect(): Promise<pg.Client>;
    override connect(callback: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): void;
    override connect(callback?: ((err: Error) => void) | ((err: null, c: pg.Client) => void)): Promise<pg.Client> | undefined {
      const connected = this.#connectToRotation().then(() => this as pg.Client);
      if (callback === undefined) return connected;
      const done = callback as (err: Error | null, c?: pg.Client) => void;
      connected.then(
        (client) => done(null, client),
        (error: Error) => done(error),
      );
      return undefined;
    }

    async #connectToRotation(): Promise<void> {
      const host = rotation.current();
      // pg.Client reads `host` and `port` when it connects, not when it is made.
      this.host = host.host;
      this.port = host.port;
      try {
        await super.connect();
      } catch (error) {
        rotation.failed(host);
        throw error;
      }
      if (target === 'any') return;
      let readOnly: unknown;
      try {
        readOnly = (await this.query<{ transaction_read_only: string }>('SHOW transaction_read_only')).rows[0]?.transaction_read_only;
      } catch (error) {
        rotation.failed(host);
        this.end().catch(() => undefined);
        throw error;
      }
      if (readOnly !== 'off') {
        rotation.failed(host);
        this.end().catch(() => undefined);
        throw new NotPrimaryError(host);
      }
    }
  }
  return FailoverClient;
}
