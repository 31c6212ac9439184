import { createHash } from 'node:crypto';
import { badRequest, conflict } from './route-error.js';

/** A response as the router writes it, kept to be replayed: the body text, frozen at the time of the first answer. */
export interface RecordedResponse {
  status: number;
  body: string;
  /** Default `application/json; charset=utf-8`. */
  contentType?: string | undefined;
}

/** How long a key is remembered (the spec does not say; 24 h is the common choice). */
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;
/** The longest key accepted. */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

interface Entry {
  fingerprint: string;
  response: Promise<RecordedResponse>;
  expiresAt: number;
}

/**
 * `X-Idempotency-Key` for writes: the first request with a key runs; a repeat with the same method, path and
 * body gets the first response again (even while the first is still running, it waits for it); a repeat with
 * anything else is a 409. A run that crashed is forgotten, so the retry runs for real.
 */
export class IdempotencyStore {
  readonly #entries = new Map<string, Entry>();

  /** Runs `execute` at most once per key and fingerprint; `replayed` tells whether this answer is a replay. */
  async run(
    key: string,
    request: { method: string; path: string; rawBody: string },
    execute: () => Promise<RecordedResponse>,
  ): Promise<{ response: RecordedResponse; replayed: boolean }> {
    if (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX_LENGTH) {
      throw badRequest(`X-Idempotency-Key must be 1 to ${IDEMPOTENCY_KEY_MAX_LENGTH} characters long.`);
    }
    const now = Date.now();
    this.#forgetExpired(now);
    const fingerprint = createHash('sha256').update(`${request.method} ${request.path}\n`).update(request.rawBody).digest('hex');
    const existing = this.#entries.get(key);
    if (existing) {
      if (existing.fingerprint !== fingerprint) {
        throw conflict(
          'This X-Idempotency-Key was already used for a different request (another method, path or body); use a new key for a new operation.',
        );
      }
      return { response: await existing.response, replayed: true };
    }
    const response = execute();
    this.#entries.set(key, { fingerprint, response, expiresAt: now + IDEMPOTENCY_RETENTION_MS });
    try {
      return { response: await response, replayed: false };
    } catch (err) {
      this.#entries.delete(key);
      throw err;
    }
  }

  #forgetExpired(now: number): void {
    for (const [key, entry] of this.#entries) {
      // Insertion order is expiry order: stop at the first live entry.
      if (entry.expiresAt > now) break;
      this.#entries.delete(key);
    }
  }
}
