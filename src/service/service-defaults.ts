import type { EnvOf } from './environment.js';

/**
 * The defaults of `payhooks serve` beyond the database's (`DATABASE_DEFAULTS` in store/database.ts): where it listens. The
 * environment reader (`PORT`, `HOST`) and the help text both take them from here.
 */
export const SERVICE_DEFAULTS = {
  port: 8787,
  host: '0.0.0.0',
  /** A client has this long to send its request headers. */
  headersTimeoutMs: 10_000,
  /** And this long for the whole request, body included: a body trickled at a byte a second is cut off. */
  requestTimeoutMs: 15_000,
  /** Open connections at once; more are dropped as they arrive (the file descriptors of the process are finite). */
  maxConnections: 8192,
} as const satisfies { port: number; host: string; headersTimeoutMs: number; requestTimeoutMs: number; maxConnections: number };

const MINUTE = 60_000;

/**
 * The gap sweeper of `serve` (docs/alerts.md#the-gap-sweeper): reconcile, then a sampled verify of the mirror, each
 * run recorded. It needs the API key; without a mirror the verify is skipped.
 */
export const SWEEPER_DEFAULTS = {
  /** Between two runs; null: off. Each run lists the delivery history of the lookback and reads about 4 × sample records. */
  everyMs: 60 * MINUTE,
  /** How far back reconciliation looks: past the sender's retry horizon of 4 days 6½ hours. */
  lookbackMs: 5 * 24 * 60 * MINUTE,
  /** Records per resource the verify compares: the newest ones listed and as many random mirror rows. */
  sample: 20,
  /** Rewrite drifted mirror rows from the API. */
  repair: true,
} as const satisfies { everyMs: number | null; lookbackMs: number; sample: number; repair: boolean };

/** The alarms of `serve` (docs/alerts.md): when each check fires. */
export const ALARM_DEFAULTS = {
  /** How often the checks are evaluated (database readings each time). */
  evaluateEveryMs: 15_000,
  /** How often the service's API is asked for activity and its delivery history (from the shared rate budget). */
  apiProbeEveryMs: MINUTE,
  /** Silence: no authentic delivery for 15 minutes while invoices changed; changes younger than a minute are not yet owed. */
  silence: { afterMs: 15 * MINUTE, graceMs: MINUTE },
  /** The last 3 deliveries or more refused for their signature, the latest within 10 minutes. */
  signature: { minFailures: 3, windowMs: 10 * MINUTE },
  /** 3 deliveries or more whose latest try failed, in the sender's history of the last hour. */
  sender: { minFailed: 3, windowMs: 60 * MINUTE },
  /** The oldest pending event older than 5 minutes. */
  backlog: { maxAgeMs: 5 * MINUTE },
  /** An event that ended dead within the last hour. */
  dead: { windowMs: 60 * MINUTE },
} as const;

/** The parsed, validated environment of `payhooks serve` (docs/configuration.md). */
export type ServiceEnv = EnvOf<'serve'>;

/** The issue notifier of `serve` (docs/admin.md#notifications): a signed POST for each new or reopened issue. */
export const ISSUES_DEFAULTS = {
  /** How often it looks for issues opened and not told yet. */
  notifyEveryMs: 5000,
  /** How long one POST may take. */
  notifyTimeoutMs: 10_000,
} as const satisfies { notifyEveryMs: number; notifyTimeoutMs: number };
