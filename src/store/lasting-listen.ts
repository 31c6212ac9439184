import type pg from 'pg';
import { type BackoffRule, backoffDelay } from '../internal/backoff.js';
import { quoteIdent } from './quote-ident.js';

/** What a LISTEN subscriber is told about its connection, beside the notifications themselves. */
export interface ListenHooks {
  /**
   * The LISTEN connection failed or could not be made (`pg_terminate_backend`, a server restart, a failover, no free
   * slot): notifications are missed until {@link ListenHooks.resubscribed}; it is tried again in `retryInMs`.
   */
  lost?(error: Error, retryInMs: number): void;
  /**
   * LISTEN is in place again after a loss. Whatever was notified meanwhile was missed: look for it now (the worker
   * claims once).
   */
  resubscribed?(): void;
}

/**
 * How the LISTEN connection is tried again after a loss: from a fifth of a second, doubling, at most 10 s, so that a
 * server back after a restart (a few seconds) is listened to again within about a second of answering.
 */
export const RELISTEN_BACKOFF: BackoffRule = { baseMs: 200, maxMs: 10_000 };

/** Options of {@link lastingListen}. */
export interface LastingListenOptions extends ListenHooks {
  /** Makes a new client, not yet connected (a dedicated one: LISTEN belongs to a session). */
  newClient(): pg.Client;
  channel: string;
  onNotify(payload: string): void;
  backoff?: BackoffRule | undefined;
}

/** A LISTEN that outlives its connections: see {@link lastingListen}. */
export interface LastingListen {
  /** Ends the subscription: no retry is scheduled, the connection is closed. */
  stop(): Promise<void>;
  /** The connection now listening, if any (for close() to cut a silent one). */
  readonly client: pg.Client | undefined;
}

/**
 * LISTENs on `channel` on a dedicated connection and keeps doing so: when the connection ends or errs, or cannot be
 * made, it is made again after {@link RELISTEN_BACKOFF} (the project's one backoff), and `resubscribed` is called
 * once it listens again. Resolves after the first attempt, whether it succeeded or not (`lost` says it did not): a
 * subscriber relies on polling meanwhile. Before this, a worker whose LISTEN connection was terminated never listened
 * again, and found new events only by its poll timer for the rest of its life (issue 49).
 */
export async function lastingListen(options: LastingListenOptions): Promise<LastingListen> {
  const rule = options.backoff ?? RELISTEN_BACKOFF;
  let stopped = false;
  let failures = 0;
  let current: pg.Client | undefined;
  let retryTimer: NodeJS.Timeout | undefined;

  const attempt = async (): Promise<void> => {
    retryTimer = undefined;
    if (stopped) return;
    const client = options.newClient();
    let failed = false;
    const fail = (error: Error) => {
      // 'error' and 'end' both come for one loss (a terminated backend sends an error, then the socket ends).
      if (failed || stopped) return;
      failed = true;
      if (current === client) current = undefined;
      client.end().catch(() => undefined);
      const retryInMs = backoffDelay(++failures, rule);
      options.lost?.(error, retryInMs);
      retryTimer = setTimeout(() => void attempt(), retryInMs);
      retryTimer.unref();
    };
    client.on('error', fail);
    client.on('end', () => fail(new Error('the LISTEN connection ended')));
    client.on('notification', (message) => {
      if (message.channel === options.channel) options.onNotify(message.payload ?? '');
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoteIdent(options.channel)}`);
    } catch (err) {
      fail(err instanceof Error ? err : new Error(String(err)));
      return;
    }
    if (failed) return;
    if (stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    current = client;
    const wasLost = failures > 0;
    failures = 0;
    if (wasLost) options.resubscribed?.();
  };

  await attempt();
  return {
    get client() {
      return current;
    },
    async stop() {
      stopped = true;
      clearTimeout(retryTimer);
      const client = current;
      current = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
