import type { Logger } from 'pino';
import { type BackoffRule, backoffDelay } from '../internal/backoff.js';
import { sleep } from '../internal/sleep.js';

/**
 * The answers of a server that is there and configured right but cannot take this session now: 53300
 * `too_many_connections` ("sorry, too many clients already", or a role's connection limit) and 57P03
 * `cannot_connect_now` (starting up, shutting down, in recovery). A refused socket, a wrong password or a missing
 * database are not among them: those are configuration to fix, and a process started with them stops at once saying so.
 */
const BUSY_SERVER_CODES: Readonly<Record<string, string>> = {
  '53300': 'the server has no free connection slot',
  '57P03': 'the server is starting up or shutting down',
};

/** How a start waits for a busy server: from 1 s, doubling, at most 30 s between tries. */
export const ADMISSION_BACKOFF: BackoffRule = { baseMs: 1000, maxMs: 30_000 };

/** Why the server turned the session away for now ({@link BUSY_SERVER_CODES}), or undefined for any other error. */
export function busyServerReason(err: unknown): string | undefined {
  // The server's error, or the one a step of the opening wrapped it in (`cause`), a few levels at most.
  for (let at = err, depth = 0; at !== null && typeof at === 'object' && depth < 5; at = (at as { cause?: unknown }).cause, depth++) {
    const code = (at as { code?: unknown }).code;
    if (typeof code === 'string' && code in BUSY_SERVER_CODES) {
      const message = at instanceof Error ? at.message : String(at);
      return `${BUSY_SERVER_CODES[code]} (SQLSTATE ${code}: ${message})`;
    }
  }
  return undefined;
}

/** Options of {@link untilAdmitted}. */
export interface UntilAdmittedOptions {
  logger: Logger;
  /** What is waiting, for the log (`the inbox`). */
  what: string;
  backoff?: BackoffRule | undefined;
  /** Stops waiting (rejects with its reason). */
  signal?: AbortSignal | undefined;
}

/**
 * Runs `open` until the server admits it: while it answers that it cannot take a session now (no free slot, starting
 * up: {@link busyServerReason}), logs that it waits and why, and tries again after the project's backoff. Any other
 * error is thrown at once. A `serve` started while the server had no free slot used to exit at once (issue 49).
 *
 * @example
 * const store = await untilAdmitted(() => hooks.ready(), { logger, what: 'the inbox' });
 */
export async function untilAdmitted<T>(open: () => Promise<T>, options: UntilAdmittedOptions): Promise<T> {
  const { logger, what } = options;
  const rule = options.backoff ?? ADMISSION_BACKOFF;
  let failures = 0;
  const since = Date.now();
  for (;;) {
    try {
      const opened = await open();
      if (failures > 0) logger.info({ waitedMs: Date.now() - since, tries: failures + 1 }, `the database admitted ${what}; starting`);
      return opened;
    } catch (err) {
      const reason = busyServerReason(err);
      if (reason === undefined) throw err;
      const retryInMs = Math.round(backoffDelay(++failures, rule));
      logger.warn(
        { reason, retryInMs, tries: failures },
        `waiting for the database: ${reason}; trying again in ${retryInMs} ms (${what} starts once a session is admitted)`,
      );
      await sleep(retryInMs, options.signal);
    }
  }
}
