import type { Logger } from 'pino';
import { backoffDelay } from '../internal/backoff.js';

/** How a {@link FailureThrottle} slows failed authentications. */
export interface FailureLimits {
  freeFailures: number;
  firstDelayMs: number;
  maxDelayMs: number;
  forgetAfterMs: number;
  maxAddresses: number;
}

/** The limits of the console's throttle; docs/admin.md quotes these. */
export const FAILURE_THROTTLE_DEFAULTS = {
  /** Failures from one address answered at once (a person mistyping); each one after that waits. */
  freeFailures: 3,
  /** The wait before answering the first failure past the free ones; it doubles with each further failure… */
  firstDelayMs: 250,
  /** …up to this. */
  maxDelayMs: 8000,
  /** An address is forgotten this long after its last failure. */
  forgetAfterMs: 15 * 60_000,
  /** Addresses remembered at once; past it, the one whose last failure is oldest is forgotten. */
  maxAddresses: 10_000,
} as const satisfies FailureLimits;

interface Failures {
  count: number;
  lastAt: number;
}

/**
 * Counts failed authentications per client address and says how long to wait before answering the next one, so
 * that guessing the console token from one address gets slower with every wrong guess, while a right token is
 * never delayed. Successes do not reset the count: behind a proxy every client shares its address, and an
 * operator's console polling with the right token must not wipe an attacker's record. Memory is bounded by
 * `maxAddresses`; IPv6 addresses count per /64, since one host usually holds a whole /64.
 *
 * @example
 * const throttle = new FailureThrottle(logger);
 * await sleep(throttle.failed(req.socket.remoteAddress));
 */
export class FailureThrottle {
  readonly #byAddress = new Map<string, Failures>();
  readonly #logger: Logger | undefined;
  readonly #limits: FailureLimits;

  constructor(logger?: Logger, limits: FailureLimits = FAILURE_THROTTLE_DEFAULTS) {
    this.#logger = logger;
    this.#limits = limits;
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.#byAddress.size;
  }

  /** Records a failed authentication from `address`; returns the milliseconds to wait before answering it. */
  failed(address: string | undefined, now = Date.now()): number {
    const { freeFailures, firstDelayMs, maxDelayMs, forgetAfterMs, maxAddresses } = this.#limits;
    const key = addressKey(address);
    this.#forgetOlderThan(now - forgetAfterMs);
    const failures = this.#byAddress.get(key) ?? { count: 0, lastAt: now };
    // Re-inserted, so the map stays ordered by last failure, oldest first: the first key is the one to forget.
    this.#byAddress.delete(key);
    failures.count += 1;
    failures.lastAt = now;
    this.#byAddress.set(key, failures);
    while (this.#byAddress.size > maxAddresses) this.#byAddress.delete(this.#byAddress.keys().next().value!);

    const over = failures.count - freeFailures;
    const delayMs = backoffDelay(over, { baseMs: firstDelayMs, maxMs: maxDelayMs, jitter: false });
    // The first slowed failure, then at 8, 16, 32…: a log line per doubling, not per guess.
    if (over === 1 || (over > 1 && isPowerOfTwo(failures.count))) {
      this.#logger?.warn(
        { address: key, failures: failures.count, delayMs },
        `console: ${failures.count} failed authentications from ${key} in the last ${forgetAfterMs / 60_000} minutes; each further one is answered after a delay`,
      );
    }
    return delayMs;
  }

  #forgetOlderThan(cutoff: number): void {
    for (const [key, failures] of this.#byAddress) {
      if (failures.lastAt >= cutoff) return;
      this.#byAddress.delete(key);
    }
  }
}

const isPowerOfTwo = (n: number) => n > 0 && (n & (n - 1)) === 0;

/**
 * The key an address counts under: IPv4 as it is (also when IPv4-mapped, `::ffff:10.0.0.1`), IPv6 by its /64
 * prefix, `unknown` when the server does not know it (Fetch runtimes).
 */
export function addressKey(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (!address.includes(':')) return address;
  const [head = '', tail] = address.split('%', 1)[0]!.toLowerCase().split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array(Math.max(8 - left.length - right.length, 0)).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
