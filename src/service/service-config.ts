import { z } from 'zod';
import { MAX_TIMER_MS } from '../internal/duration.js';
import { LOGGER_DEFAULTS } from '../logger.js';
import { DEFAULT_ACCOUNT_LABELS } from '../metrics/payhooks-metrics.js';
import { DATABASE_DEFAULTS, DATABASE_POOLERS } from '../store/database.js';
import { DEFAULT_APP_SCHEMA } from '../store/migrate.js';
import type { SyncConfig } from '../sync/config.js';
import { withWorkerDefaults, workerTunablesShape } from '../worker/options-schema.js';
import { MIRROR_DEFAULTS } from '../sync/mirror/mirror-sink.js';
import { ALARM_DEFAULTS, ISSUES_DEFAULTS, SERVICE_DEFAULTS, SWEEPER_DEFAULTS } from './service-defaults.js';

/** What a service process does: receive, run handlers, or both (the default). */
export const SERVICE_ROLES = ['all', 'receiver', 'worker'] as const;
export type ServiceRole = (typeof SERVICE_ROLES)[number];

/** Where spans go when tracing is on (docs/tracing.md): OTLP over HTTP, or the console. */
export const TRACING_EXPORTERS = ['otlp', 'console'] as const;
export type TracingExporter = (typeof TRACING_EXPORTERS)[number];

// The sinks, mirror and reconcile sections are the sync configuration file's, checked by its own schema when the
// file is loaded (src/sync/config.ts): taken here as they come out of it, never restated.
const fromSyncConfig = <K extends keyof SyncConfig>(key: K) =>
  z.custom<SyncConfig[K]>((value) => value !== undefined, { error: `${key} comes from the sync configuration file` });

/** A span of time in whole milliseconds, at least one. */
const positiveMs = z.number().int().positive();

/**
 * The standalone service's whole configuration, every field defaulted (docs/configuration.md#serviceconfig): what
 * {@link resolveServiceConfig} makes from the environment, the configuration file and the command line, and what
 * `startService` composes from. Each default is stated once: in `SERVICE_DEFAULTS`, `DATABASE_DEFAULTS`,
 * `WORKER_DEFAULTS`, `MIRROR_DEFAULTS` or `LOGGER_DEFAULTS`, and quoted below.
 */
export const serviceConfigSchema = z.object({
  /** `all` (default): receive and run handlers; `receiver`; `worker`. Flag `--role`. */
  role: z.enum(SERVICE_ROLES).default('all'),
  receiver: z
    .object({
      /** Interface to listen on. `HOST`, default `0.0.0.0`. */
      host: z.string().min(1).default(SERVICE_DEFAULTS.host),
      /** Port to listen on, 0: any free one. `PORT`, default 8787. */
      port: z.number().int().min(0).max(65535).default(SERVICE_DEFAULTS.port),
      /**
       * The endpoint's signing secrets (several during a rotation). `PAYHOOKS_WEBHOOK_SECRET`, else a live simulator
       * session's; required unless the role is `worker`.
       */
      secrets: z.array(z.string().min(1)).optional(),
      /**
       * TEST ONLY: measure the signature tolerance against a manual-clock simulator's `x-payhooks-simulated-time`
       * header (`withSimulatedClock`). `PAYHOOKS_TEST_SIMULATED_CLOCK`, default false.
       */
      trustSimulatedClock: z.boolean().default(false),
      /** A client has this long to send its headers. Default 10,000 ms. */
      headersTimeoutMs: z.number().int().positive().default(SERVICE_DEFAULTS.headersTimeoutMs),
      /** And this long for the whole request. Default 15,000 ms. */
      requestTimeoutMs: z.number().int().positive().default(SERVICE_DEFAULTS.requestTimeoutMs),
      /** Open connections at once. Default 8192. */
      maxConnections: z.number().int().positive().default(SERVICE_DEFAULTS.maxConnections),
    })
    .prefault({}),
  database: z
    .object({
      /** PostgreSQL connection string. `DATABASE_URL`; unset: the embedded PGlite database in `dataDir`. */
      url: z.string().min(1).optional(),
      /** The embedded database's folder. `PAYHOOKS_DATA_DIR`, default `.payhooks/pgdata`. */
      dataDir: z.string().min(1).default(DATABASE_DEFAULTS.dataDir),
      /** Schema of payhooks' tables. `PAYHOOKS_SCHEMA`, default `payhooks`. */
      schema: z.string().min(1).default(DATABASE_DEFAULTS.schema),
      /**
       * `transaction` when `url` is a transaction pooler (PgBouncer's pool_mode = transaction): see docs/database.md.
       * `PAYHOOKS_DATABASE_POOLER` or the file's `database.pooler`, default `none`.
       */
      pooler: z.enum(DATABASE_POOLERS).default(DATABASE_DEFAULTS.pooler),
      /** The app's own numbered SQL migrations. `PAYHOOKS_APP_MIGRATIONS`; unset: none. */
      appMigrations: z.string().min(1).optional(),
      /** Schema of the app's tables. `PAYHOOKS_APP_SCHEMA`, default `public`. */
      appSchema: z.string().min(1).default(DEFAULT_APP_SCHEMA),
    })
    .prefault({}),
  /**
   * The worker's options (`WORKER_DEFAULTS`): the file's `worker` key, `PAYHOOKS_WORKER_CONCURRENCY`,
   * `PAYHOOKS_MAX_ATTEMPTS`, `PAYHOOKS_HANDLER_TIMEOUT_MS` and `PAYHOOKS_STOP_TIMEOUT_MS` overriding it.
   */
  worker: z.object(workerTunablesShape).prefault({}).transform(withWorkerDefaults),
  /**
   * The organizations this service receives for (docs/accounts.md): the configuration file's `accounts` with their
   * credentials read. Empty (the default): the one default account, with `receiver.secrets` and `api`.
   */
  accounts: z
    .array(
      z.object({
        id: z.string().min(1),
        /** Empty only in a process that receives nothing (`--role worker`). */
        secrets: z.array(z.string().min(1)),
        apiKey: z.string().min(1).optional(),
        apiUrl: z.string().min(1).optional(),
        rateBudget: z
          .object({ requestsPerWindow: z.number().int().positive(), windowMs: z.number().int().positive().optional() })
          .optional(),
        workerShare: z.number().int().min(1).max(1000).default(1),
      }),
    )
    .default([]),
  /** The current-state API: `PAYHOOKS_API_KEY` and `PAYHOOKS_API_URL` (both, or neither: no `ctx.api`). */
  api: z.object({ key: z.string().min(1).optional(), url: z.string().min(1).optional() }).prefault({}),
  /** The operator console: `PAYHOOKS_ADMIN_TOKEN`; unset: off (404). */
  console: z.object({ adminToken: z.string().min(1).optional() }).prefault({}),
  metrics: z
    .object({
      /** Node's process metrics (CPU, heap, event loop) on /metrics beside payhooks' own. Default true. */
      processMetrics: z.boolean().default(true),
      /** Accounts with a label value of their own on /metrics (the rest: `other`); the file's `metrics.accountLabels`. Default 100. */
      accountLabels: z.number().int().min(1).max(10_000).default(DEFAULT_ACCOUNT_LABELS),
    })
    .prefault({}),
  /**
   * The gap sweeper (docs/alerts.md#the-gap-sweeper), `sweeper` of the configuration file: reconcile and a sampled
   * verify every `everyMs` (default 1 h; null: off), each run recorded for /metrics, /admin/api/health and the console.
   */
  sweeper: z
    .object({
      everyMs: z.number().int().min(1000).max(MAX_TIMER_MS).nullable().default(SWEEPER_DEFAULTS.everyMs),
      /** Default 5 days. */
      lookbackMs: z.number().int().min(60_000).default(SWEEPER_DEFAULTS.lookbackMs),
      /** Records per resource the verify compares, 1 to 10,000. Default 20. */
      sample: z.number().int().min(1).max(10_000).default(SWEEPER_DEFAULTS.sample),
      /** Default true. */
      repair: z.boolean().default(SWEEPER_DEFAULTS.repair),
    })
    .prefault({}),
  /** The alarms' thresholds (docs/alerts.md#thresholds), `alarms` of the configuration file; `ALARM_DEFAULTS`. */
  alarms: z
    .object({
      /** Default 15 s. */
      evaluateEveryMs: z.number().int().min(100).max(MAX_TIMER_MS).default(ALARM_DEFAULTS.evaluateEveryMs),
      /** Default 1 min. */
      apiProbeEveryMs: z.number().int().min(100).max(MAX_TIMER_MS).default(ALARM_DEFAULTS.apiProbeEveryMs),
      silence: z
        .object({
          afterMs: positiveMs.default(ALARM_DEFAULTS.silence.afterMs),
          graceMs: z.number().int().min(0).default(ALARM_DEFAULTS.silence.graceMs),
        })
        .prefault({}),
      signature: z
        .object({
          minFailures: z.number().int().min(1).default(ALARM_DEFAULTS.signature.minFailures),
          windowMs: positiveMs.default(ALARM_DEFAULTS.signature.windowMs),
        })
        .prefault({}),
      sender: z
        .object({
          minFailed: z.number().int().min(1).default(ALARM_DEFAULTS.sender.minFailed),
          windowMs: positiveMs.default(ALARM_DEFAULTS.sender.windowMs),
        })
        .prefault({}),
      backlog: z.object({ maxAgeMs: positiveMs.default(ALARM_DEFAULTS.backlog.maxAgeMs) }).prefault({}),
      dead: z.object({ windowMs: positiveMs.default(ALARM_DEFAULTS.dead.windowMs) }).prefault({}),
    })
    .prefault({}),
  /**
   * Issues (docs/admin.md#issues), `issues` of the configuration file: `notify.url` gets a POST signed with
   * `notify.secret` (the default signature scheme) for each new or reopened issue. `PAYHOOKS_ISSUES_NOTIFY_URL` and
   * `PAYHOOKS_ISSUES_NOTIFY_SECRET` override the file; no URL: no POST (the `open_issues` alarm still fires).
   */
  issues: z
    .object({
      notify: z
        .object({
          url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
          secret: z.string().min(1).optional(),
          /** Default 5 s. */
          everyMs: z.number().int().min(100).max(MAX_TIMER_MS).default(ISSUES_DEFAULTS.notifyEveryMs),
          /** Default 10 s. */
          timeoutMs: z.number().int().min(100).max(MAX_TIMER_MS).default(ISSUES_DEFAULTS.notifyTimeoutMs),
        })
        .refine((notify) => notify.url === undefined || notify.secret !== undefined, {
          path: ['secret'],
          error: 'is needed with notify.url: the notice is signed with it (PAYHOOKS_ISSUES_NOTIFY_SECRET)',
        })
        .prefault({}),
    })
    .prefault({}),
  tracing: z
    .object({
      /**
       * The exporters spans go to (docs/tracing.md); empty (the default): off, and no SDK package is loaded.
       * `OTEL_TRACES_EXPORTER`, else the file's `tracing.exporter`, else `otlp` when an OTLP endpoint variable is set;
       * `OTEL_SDK_DISABLED=true` turns it off.
       */
      exporters: z.array(z.enum(TRACING_EXPORTERS)).default([]),
      /**
       * A delivery whose signature holds joins the trace its `traceparent` names; false (the default): each delivery's
       * receive span starts a trace, linked to it (docs/tracing.md#whose-trace-a-delivery-joins). The file's
       * `tracing.trustIncomingContext`.
       */
      trustIncomingContext: z.boolean().default(false),
    })
    .prefault({}),
  /** Level of the JSON log lines (the CLI's logger). `PAYHOOKS_LOG_LEVEL`, default `info`. */
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default(LOGGER_DEFAULTS.level),
  /** The configuration file it came from (`PAYHOOKS_CONFIG`, else payhooks.config.js, .mjs or .json); null: none. */
  configFile: z.string().nullable().default(null),
  /** The Postgres mirror: `mirror` of the file, schema `PAYHOOKS_MIRROR_SCHEMA` overriding it. */
  mirror: fromSyncConfig('mirror').default({ enabled: undefined, schema: MIRROR_DEFAULTS.schema, eventTypes: undefined }),
  /** Periodic reconciliation: `reconcile` of the file; `every` unset: never. */
  reconcile: fromSyncConfig('reconcile').default({ every: undefined, lookback: '5d', endpointId: undefined }),
  /** The history's partitions and retention: `history` of the file (docs/storage.md); default daily, kept forever. */
  history: fromSyncConfig('history').default({}),
  /** The sinks of the file: HTTP forward targets, brokers, connectors and the `sinks` list of any kind (docs/sinks.md). */
  sinks: z
    .object({
      forward: fromSyncConfig('forward'),
      brokers: fromSyncConfig('brokers'),
      connectors: fromSyncConfig('connectors'),
      sinks: fromSyncConfig('sinks').default([]),
    })
    .prefault({ forward: [], brokers: [], connectors: [], sinks: [] }),
});

/** The standalone service's resolved configuration: every field set (docs/configuration.md#serviceconfig). */
export type ServiceConfig = z.output<typeof serviceConfigSchema>;
/** A configuration as written by hand: every field optional, defaults filled in by {@link defineServiceConfig}. */
export type ServiceConfigInput = z.input<typeof serviceConfigSchema>;

/**
 * A full {@link ServiceConfig} from a partial one, defaults filled in; for apps that build their configuration in
 * code rather than from the environment (resolveServiceConfig checks more: secrets, tokens, the file).
 *
 * @example
 * const config = defineServiceConfig({ receiver: { port: 0, secrets: ['whsec'] }, database: { dataDir: 'memory://' } });
 */
export function defineServiceConfig(input: ServiceConfigInput = {}): ServiceConfig {
  return serviceConfigSchema.parse(input);
}
