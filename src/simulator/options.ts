import type { Logger } from 'pino';
import { API_RATE_LIMIT_PER_MINUTE } from '../events/rest-contract.js';
import type { ClockMode } from './clock.js';
import type { SimulatorSnapshot } from './state-file.js';

/** A source of uniform numbers in [0, 1), like `Math.random`. */
export type RandomSource = () => number;

/** Options of {@link startSimulator}; every field is optional and its default is in {@link SIMULATOR_DEFAULTS}. */
export interface SimulatorOptions {
  /** Port to listen on; 0 picks a free one. Default 0 (the CLI's default is 4010). */
  port?: number | undefined;
  /** Interface to listen on. Default `127.0.0.1`. */
  host?: string | undefined;
  /**
   * Divides the retry delays (2 s … 3 days) and the rotation grace period: 100 turns the 2 s retry into 20 ms.
   * Default 1 (the spec's real schedule). Must be > 0.
   */
  timeScale?: number | undefined;
  /** Probability (0–1) that a delivery is sent a second time, as a separate POST with the same eventId. Default 0. */
  duplicateRate?: number | undefined;
  /** Buffer outgoing deliveries for {@link REORDER_WINDOW_MS} and send them shuffled. Default false. */
  reorder?: boolean | undefined;
  /**
   * Probability (0–1) that a REST call under `/v1` answers 503. For writes, half of those failures happen after
   * the write was applied (the answer is "lost"), so a retry with the same `X-Idempotency-Key` replays the first
   * result. Default 0.
   */
  failRate?: number | undefined;
  /** Requests per minute per client IP before 429. Default 1000 (the spec's limit). */
  rateLimitPerMinute?: number | undefined;
  /** How long a receiver has to answer 2xx before the attempt counts as failed. Not scaled. Default 10 000 ms. */
  deliveryTimeoutMs?: number | undefined;
  /** How long the previous secret still signs after a rotation, before division by `timeScale`. Default 24 h. */
  rotationGraceMs?: number | undefined;
  /** Most deliveries in flight at once. Default 16. */
  deliveryConcurrency?: number | undefined;
  /** The randomness behind the chaos (duplicates, shuffles, `failRate`): a function like `Math.random`, or a seed for a reproducible run. Default `Math.random`. Ids and secrets always come from node:crypto. */
  random?: RandomSource | number | undefined;
  /**
   * The organizations it runs: a count (`3`: `acct_1`, `acct_2`, `acct_3`) or their ids (`['gym', 'school']`), each
   * with its own API key, endpoints, secrets and resources. Default 1: one organization, `default`, that accepts
   * any `sk_test_`/`sk_live_` key, as the simulator always did. See docs/simulator.md#organizations.
   */
  accounts?: number | readonly string[] | undefined;
  /** Where to log requests and deliveries (never secrets or bodies). Default: no logging. */
  logger?: Logger | undefined;
  /**
   * `real`: the simulator's time is the machine's. `manual`: time stands still until `simulator.clock.advance()`
   * (or `payhooks clock advance`); retries and subscription collections then play at their simulated times, in
   * order, and `timeScale` does not apply. Default `real`.
   */
  clock?: ClockMode | undefined;
  /** A manual clock's first reading (a Date, an ISO 8601 string or ms since the epoch). Default: the machine's time. */
  startAt?: Date | string | number | undefined;
  /**
   * Start from a snapshot (`simulator.snapshot()`, or what `payhooks simulate --state FILE` wrote): its customers,
   * endpoints and the rest, and a manual clock at the snapshot's time unless `startAt` is given.
   */
  restore?: SimulatorSnapshot | undefined;
}

/** The defaults of {@link SimulatorOptions}, in one place (the CLI overrides only `port`). */
export const SIMULATOR_DEFAULTS = {
  port: 0,
  host: '127.0.0.1',
  timeScale: 1,
  duplicateRate: 0,
  reorder: false,
  failRate: 0,
  rateLimitPerMinute: API_RATE_LIMIT_PER_MINUTE,
  deliveryTimeoutMs: 10_000,
  rotationGraceMs: 24 * 60 * 60 * 1000,
  deliveryConcurrency: 16,
  accounts: 1,
  clock: 'real',
} as const;

/** The id of the one organization of a simulator that runs one (what a single-account payhooks calls its account). */
export const SINGLE_ACCOUNT_ID = 'default';
/** The most organizations one simulator runs. */
export const MAX_SIMULATOR_ACCOUNTS = 1000;
/** What an account id may be: it becomes a path segment (`/webhooks/<id>`), so lower-case letters, digits, `_` and `-`. */
export const ACCOUNT_ID_PATTERN = /^[a-z0-9][a-z0-9_-]{0,62}$/;

/** The spec's retry delays after a failed delivery, before division by the time scale. */
export const RETRY_DELAYS_MS: readonly number[] = [
  2_000,
  10_000,
  5 * 60_000,
  20 * 60_000,
  60 * 60_000,
  5 * 60 * 60_000,
  24 * 60 * 60_000,
  3 * 24 * 60 * 60_000,
];

/** How long `reorder` holds outgoing deliveries before sending the batch shuffled. */
export const REORDER_WINDOW_MS = 50;

/** {@link SimulatorOptions} with every default applied and every value checked. */
export interface ResolvedSimulatorOptions {
  port: number;
  host: string;
  timeScale: number;
  duplicateRate: number;
  reorder: boolean;
  failRate: number;
  rateLimitPerMinute: number;
  deliveryTimeoutMs: number;
  rotationGraceMs: number;
  deliveryConcurrency: number;
  /** The organizations' ids, in order (the first is the default of `trigger` and of {@link Simulator.emit}). */
  accounts: readonly string[];
  random: RandomSource;
  logger: Logger | undefined;
  clock: ClockMode;
  /** The manual clock's first reading, ms since the epoch; undefined: the machine's time at start. */
  startAt: number | undefined;
}

/** A simulator option out of range; the message names the option and what it takes. */
export class SimulatorOptionError extends RangeError {
  override readonly name = 'SimulatorOptionError';
}

function check(ok: boolean, message: string): void {
  if (!ok) throw new SimulatorOptionError(message);
}

/**
 * Applies the defaults and checks each value, throwing a {@link SimulatorOptionError} with a clear message.
 *
 * @example
 * resolveSimulatorOptions({ duplicateRate: 2 }); // throws: duplicateRate must be between 0 and 1, not 2.
 */
export function resolveSimulatorOptions(options: SimulatorOptions = {}): ResolvedSimulatorOptions {
  const o = { ...SIMULATOR_DEFAULTS, ...withoutUndefined(options) };
  check(Number.isInteger(o.port) && o.port >= 0 && o.port <= 65535, `port must be a whole number from 0 to 65535, not ${o.port}.`);
  check(typeof o.host === 'string' && o.host.length > 0, 'host must be a non-empty string.');
  check(Number.isFinite(o.timeScale) && o.timeScale > 0, `timeScale must be a number greater than 0, not ${o.timeScale}.`);
  for (const name of ['duplicateRate', 'failRate'] as const) {
    check(Number.isFinite(o[name]) && o[name] >= 0 && o[name] <= 1, `${name} must be between 0 and 1, not ${o[name]}.`);
  }
  check(
    Number.isInteger(o.rateLimitPerMinute) && o.rateLimitPerMinute > 0,
    `rateLimitPerMinute must be a positive whole number, not ${o.rateLimitPerMinute}.`,
  );
  check(
    Number.isFinite(o.deliveryTimeoutMs) && o.deliveryTimeoutMs > 0,
    `deliveryTimeoutMs must be a positive number, not ${o.deliveryTimeoutMs}.`,
  );
  check(Number.isFinite(o.rotationGraceMs) && o.rotationGraceMs >= 0, `rotationGraceMs must be 0 or more, not ${o.rotationGraceMs}.`);
  check(
    Number.isInteger(o.deliveryConcurrency) && o.deliveryConcurrency > 0,
    `deliveryConcurrency must be a positive whole number, not ${o.deliveryConcurrency}.`,
  );
  check(o.clock === 'real' || o.clock === 'manual', `clock must be 'real' or 'manual', not ${JSON.stringify(o.clock)}.`);
  const startAt = options.startAt === undefined ? undefined : new Date(options.startAt).getTime();
  check(startAt === undefined || Number.isFinite(startAt), `startAt must be a date, not ${JSON.stringify(options.startAt)}.`);
  const random = options.random;
  check(
    random === undefined || typeof random === 'function' || Number.isFinite(random),
    'random must be a function like Math.random or a numeric seed.',
  );
  return {
    port: o.port,
    host: o.host,
    timeScale: o.timeScale,
    duplicateRate: o.duplicateRate,
    reorder: o.reorder,
    failRate: o.failRate,
    rateLimitPerMinute: o.rateLimitPerMinute,
    deliveryTimeoutMs: o.deliveryTimeoutMs,
    rotationGraceMs: o.rotationGraceMs,
    deliveryConcurrency: o.deliveryConcurrency,
    accounts: resolveAccounts(o.accounts),
    random: typeof random === 'function' ? random : typeof random === 'number' ? seededRandom(random) : Math.random,
    logger: options.logger,
    clock: o.clock,
    startAt,
  };
}

/**
 * The organizations' ids: `1` is the one `default` organization; `n` is `acct_1` … `acct_n`; a list is taken as
 * given, each id checked against {@link ACCOUNT_ID_PATTERN} and unique.
 */
export function resolveAccounts(accounts: number | readonly string[]): readonly string[] {
  if (typeof accounts === 'number') {
    check(
      Number.isInteger(accounts) && accounts >= 1 && accounts <= MAX_SIMULATOR_ACCOUNTS,
      `accounts must be a whole number from 1 to ${MAX_SIMULATOR_ACCOUNTS}, or a list of account ids, not ${accounts}.`,
    );
    return accounts === 1 ? [SINGLE_ACCOUNT_ID] : Array.from({ length: accounts }, (_, i) => `acct_${i + 1}`);
  }
  check(Array.isArray(accounts), 'accounts must be a number or a list of account ids.');
  check(
    accounts.length >= 1 && accounts.length <= MAX_SIMULATOR_ACCOUNTS,
    `accounts must list 1 to ${MAX_SIMULATOR_ACCOUNTS} account ids, not ${accounts.length}.`,
  );
  const bad = accounts.filter((id) => typeof id !== 'string' || !ACCOUNT_ID_PATTERN.test(id));
  check(
    bad.length === 0,
    `account ids are 1 to 63 lower-case letters, digits, "_" or "-", starting with a letter or digit; not ${bad.map((id) => JSON.stringify(id)).join(', ')}.`,
  );
  const repeated = accounts.filter((id, i) => accounts.indexOf(id) !== i);
  check(repeated.length === 0, `account ids must be unique; repeated: ${[...new Set(repeated)].join(', ')}.`);
  return [...accounts];
}

function withoutUndefined<T extends object>(value: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as { [K in keyof T]?: Exclude<T[K], undefined> };
}

/**
 * A small deterministic generator (mulberry32): the same seed gives the same duplicates and the same shuffles,
 * so a chaos run that found a bug can be run again.
 */
export function seededRandom(seed: number): RandomSource {
  let state = Math.trunc(seed) >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
