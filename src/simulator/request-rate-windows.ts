/** What {@link RequestRateWindows.take} decides for one request. */
export type RateDecision = { allowed: true } | { allowed: false; retryAfterSeconds: number };

const WINDOW_MS = 60_000;

/**
 * The spec's "N requests per minute per IP": a fixed 60 s window per client address, started by its first
 * request. Beyond the limit the answer says, in whole seconds rounded up, when the window reopens.
 */
export class RequestRateWindows {
  readonly #windows = new Map<string, { startedAt: number; count: number }>();

  constructor(
    readonly limitPerMinute: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Counts one request from `client` and says whether it may proceed. */
  take(client: string): RateDecision {
    const now = this.now();
    let window = this.#windows.get(client);
    if (!window || now - window.startedAt >= WINDOW_MS) {
      if (this.#windows.size > 10_000) this.#forgetExpired(now);
      window = { startedAt: now, count: 0 };
      this.#windows.set(client, window);
    }
    window.count += 1;
    if (window.count <= this.limitPerMinute) return { allowed: true };
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((window.startedAt + WINDOW_MS - now) / 1000)) };
  }

  #forgetExpired(now: number): void {
    for (const [client, window] of this.#windows) if (now - window.startedAt >= WINDOW_MS) this.#windows.delete(client);
  }
}
