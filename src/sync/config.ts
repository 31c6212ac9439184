import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { PayhooksError } from '../errors.js';
import type { EventType } from '../events/event-types.js';
import { formatDuration } from '../internal/duration.js';
import { within } from '../internal/within.js';
import { DATABASE_POOLERS, type DatabasePooler } from '../store/database.js';
import { durationText } from './config-fields.js';
import { type Connector, connectorKind } from './connector.js';
import { type ForwardTarget, httpForwardSink } from './http-forward.js';
import { MIRROR_DEFAULTS, mirrorConfigSchema } from './mirror/mirror-sink.js';
import { type BrokerConfig, brokersSchema, type SinkAccounts, type SinkEntry, sinksSchema, withAccounts } from './sink-registry.js';
import { type HistoryOptions, historySettings } from '../worker/history-upkeep.js';
import { type ServiceWorkerOptions, workerConfigSchema } from './worker-config.js';
import { type AccountEntry, accountsFileSchema } from './accounts-config.js';

/** The file names `serve`, `backfill` and `reconcile` look for in the working directory, in this order. */
export const CONFIG_FILE_NAMES = ['payhooks.config.js', 'payhooks.config.mjs', 'payhooks.config.json'] as const;

/** How long a `.js`/`.mjs` configuration file may take to load (its top-level awaits included) before the command gives up. */
export const CONFIG_LOAD_TIMEOUT_MS = 10_000;

/** The range of each duration of the file (config-fields.ts). */
export { DURATION_RANGES } from './config-fields.js';

const reconcileSchema = z.strictObject({
  /** How often serve runs reconciliation, 1m to 24d; unset: never (run `payhooks reconcile` yourself). */
  every: durationText('1h', 'reconcile.every').optional(),
  /** How far back each run looks, 1m to 90d. Default 5d: longer than the sender's retry horizon of 4 d 6½ h. */
  lookback: durationText('5d', 'reconcile.lookback').optional(),
  /** The webhook endpoint whose deliveries count, when the organization has several. */
  endpointId: z.string().min(1).optional(),
});

/**
 * The history's partitions and retention (docs/storage.md): the options of `createPayhooks({ history })`, checked by
 * the same rule (historySettings), each problem under its own key.
 */
const historyConfigSchema = z
  .strictObject({
    partition: z.string().optional(),
    ahead: z.number().optional(),
    retention: z.strictObject({ history: z.string().optional(), ledger: z.string().optional() }).optional(),
  })
  .superRefine((history, ctx) => {
    try {
      historySettings(history);
    } catch (err) {
      if (!(err instanceof RangeError)) throw err;
      // Its messages start with the option's path (`retention.ledger must …`).
      const path = /^[A-Za-z.]+/.exec(err.message)?.[0]?.split('.') ?? [];
      ctx.addIssue({ code: 'custom', path, message: err.message });
    }
  });

/** The sync configuration file's shape (docs/configuration.md#the-sync-configuration-file). */
export const syncConfigSchema = z.strictObject({
  /**
   * Several organizations in one service (docs/accounts.md#configuration): each `{ id, secrets, apiKey?, apiUrl?,
   * rateBudget?, workerShare? }`, credentials as `{ env }` or `{ file }` references. Unset: the one default account.
   */
  accounts: accountsFileSchema.optional(),
  /** serve's /metrics: `accountLabels`, how many accounts get a label value of their own (the rest: `other`). */
  metrics: z.strictObject({ accountLabels: z.number().int().min(1).max(10_000).optional() }).optional(),
  /** The Postgres mirror: `true`/`false`, or its options. Unset: on when serve has no --handlers. */
  mirror: mirrorConfigSchema.optional(),
  reconcile: reconcileSchema.optional(),
  /** HTTP forward targets (docs/sinks.md#http-forward). */
  forward: z.array(withAccounts(httpForwardSink.schema)).optional(),
  /** Message brokers: `rabbitmq`, `nats`, `redis-streams` entries (docs/sinks.md#message-brokers). */
  brokers: brokersSchema.optional(),
  /** Connectors made with defineConnector (docs/sinks.md#connectors). */
  connectors: z.array(connectorKind.schema).optional(),
  /** Sinks of any kind, each `{ kind, name, … }` (docs/sinks.md#the-sinks-list). */
  sinks: sinksSchema.optional(),
  /**
   * How serve reaches its database: `{ pooler: 'transaction' }` when DATABASE_URL is a transaction pooler such as
   * PgBouncer (docs/database.md#behind-pgbouncer); `PAYHOOKS_DATABASE_POOLER` overrides it.
   */
  database: z.strictObject({ pooler: z.enum(DATABASE_POOLERS).optional() }).optional(),
  /** The worker of `serve`: `WORKER_DEFAULTS`' names, durations in ms (docs/configuration.md#the-worker-of-serve). */
  worker: workerConfigSchema.optional(),
  /** The history's partitions and retention: `{ partition: 'day', retention: { history: '30d' } }` (docs/storage.md). */
  history: historyConfigSchema.optional(),
  /** serve's gap sweeper (docs/alerts.md#the-gap-sweeper), in ms: checked with the rest of serve's configuration. */
  sweeper: z.record(z.string(), z.unknown()).optional(),
  /** serve's alarm thresholds (docs/alerts.md#thresholds), in ms: checked with the rest of serve's configuration. */
  alarms: z.record(z.string(), z.unknown()).optional(),
  /** serve's issue notifications (docs/admin.md#notifications): checked with the rest of serve's configuration. */
  issues: z.record(z.string(), z.unknown()).optional(),
  /**
   * OpenTelemetry tracing of `serve` (docs/tracing.md): `exporter` `otlp` (OTLP over HTTP, to
   * `OTEL_EXPORTER_OTLP_ENDPOINT`), `console`, or `none`, which the `OTEL_*` variables override (unset: off);
   * `trustIncomingContext` (default false): a delivery whose signature holds joins the trace its `traceparent` names.
   */
  tracing: z
    .strictObject({ exporter: z.enum(['otlp', 'console', 'none']).optional(), trustIncomingContext: z.boolean().optional() })
    .optional(),
});
export type SyncConfigFile = z.infer<typeof syncConfigSchema>;

/** The configuration as the service uses it: defaults applied. */
export interface SyncConfig {
  /** Where it came from: a path, or null when there is no file. */
  path: string | null;
  /** The file's accounts, their credentials not yet read (resolveAccounts); undefined: the one default account. */
  accounts: AccountEntry[] | undefined;
  /** The file's `metrics.accountLabels`, undefined when it does not say. */
  accountLabels: number | undefined;
  /** The mirror's settings; `enabled` undefined when the file does not say (the caller decides the default). */
  mirror: { enabled: boolean | undefined; schema: string; eventTypes: EventType[] | undefined };
  reconcile: { every: string | undefined; lookback: string; endpointId: string | undefined };
  /** HTTP forward targets, secrets resolved; each may be limited to some accounts. */
  forward: (ForwardTarget & SinkAccounts)[];
  brokers: (BrokerConfig & SinkAccounts)[];
  connectors: Connector[];
  /** The entries of the `sinks` list, each with its kind (sink-registry.ts). */
  sinks: SinkEntry[];
  /** The file's `database` section: the pooler it names, undefined when it does not say. */
  database: { pooler: DatabasePooler | undefined };
  /** The worker's options the file sets (the rest default to `WORKER_DEFAULTS`); serve's variables override them. */
  worker: ServiceWorkerOptions;
  /** The history's partitions and retention the file sets (the rest default as `createPayhooks` does). */
  history: HistoryOptions;
  /** serve's own sections, as written: `resolveServiceConfig` checks them against `ServiceConfig`. */
  sweeper: Record<string, unknown> | undefined;
  alarms: Record<string, unknown> | undefined;
  issues: Record<string, unknown> | undefined;
  /** The file's tracing exporter, and whether it trusts a signed delivery's trace context; undefined when it does not say. */
  tracing: { exporter: 'otlp' | 'console' | 'none' | undefined; trustIncomingContext: boolean | undefined };
}

export type { BrokerConfig } from './sink-registry.js';

/** A configuration file that cannot be read or is not valid; the message names the file and each bad key. */
export class ConfigError extends PayhooksError {}

function formatIssues(path: string, error: z.ZodError): string {
  const lines = error.issues.map((issue) => {
    const key = issue.path.length ? issue.path.join('.') : '(the whole file)';
    return `  - ${key}: ${issue.message}`;
  });
  return `The configuration file ${path} is not valid:\n${lines.join('\n')}`;
}

/** How long `node --check` may take to point at a syntax error; past it the error is told without its line. */
const SYNTAX_CHECK_TIMEOUT_MS = 10_000;

/**
 * Where the syntax error of the module at `path` is: `, at line 3:` with the line and Node's caret under the
 * mistake. Node's import gives a module's SyntaxError without file or line (Node 20 and 22 alike); its own `--check`
 * prints both, so it is asked, only once loading has failed this way. Undefined when it says nothing useful.
 */
async function syntaxErrorWhere(path: string): Promise<string | undefined> {
  const stderr = await new Promise<string>((done) => {
    const child = execFile(process.execPath, ['--check', path], { timeout: SYNTAX_CHECK_TIMEOUT_MS, encoding: 'utf8' }, (_err, _out, err) =>
      done(String(err ?? '')),
    );
    child.on('error', () => done(''));
  });
  // `/abs/payhooks.config.mjs:3`, the source line, the caret line, a blank line, `SyntaxError: …`.
  const lines = stderr.split('\n');
  const at = lines.findIndex((line) => line.startsWith(`${path}:`));
  const line = at >= 0 ? /:(\d+)$/.exec(lines[at]!)?.[1] : undefined;
  if (line === undefined) return undefined;
  const shown = lines.slice(at + 1, at + 3).filter((text) => text.trim() !== '');
  return `, at line ${line}${shown.length ? `:\n${shown.map((text) => `    ${text}`).join('\n')}` : ''}`;
}

async function readConfigFile(path: string, timeoutMs: number): Promise<unknown> {
  if (extname(path) === '.json') {
    try {
      return JSON.parse(readFileSync(path, 'utf8'));
    } catch (err) {
      throw new ConfigError(`The configuration file ${path} could not be read as JSON: ${PayhooksError.describe(err)}`, { cause: err });
    }
  }
  const loading = import(pathToFileURL(path).href) as Promise<{ default?: unknown }>;
  // Given up on below when it takes too long; a failure after that is no news.
  loading.catch(() => undefined);
  let module: { default?: unknown } | 'timeout';
  try {
    // The timer also keeps the process alive: without it, a top-level await that never settles lets the event loop
    // empty, and Node exits with code 13 and no word about the file.
    module = await within(loading, timeoutMs);
  } catch (err) {
    const where = err instanceof SyntaxError ? await syntaxErrorWhere(path) : undefined;
    throw new ConfigError(`The configuration file ${path} could not be loaded: ${PayhooksError.describe(err)}${where ?? ''}`, {
      cause: err,
    });
  }
  if (module === 'timeout') {
    throw new ConfigError(
      `The configuration file ${path} did not finish loading within ${formatDuration(timeoutMs)}: ` +
        'a top-level await in it (or in a module it imports) has not settled. Export the object itself, and connect to services in connectors, not while the file loads.',
    );
  }
  return module.default;
}

/**
 * Finds and checks the sync configuration: the file `explicitPath` names (PAYHOOKS_CONFIG), or else the first
 * of payhooks.config.js, .mjs, .json in `cwd`; none is fine (every default applies). A bad file throws a
 * {@link ConfigError} that lists every bad key and what was expected.
 *
 * @example
 * const config = await loadSyncConfig({ explicitPath: process.env.PAYHOOKS_CONFIG });
 * if (config.mirror.enabled ?? true) await registerMirror(hooks, { schema: config.mirror.schema });
 */
export async function loadSyncConfig(
  options: {
    explicitPath?: string | undefined;
    cwd?: string;
    mirrorSchema?: string | undefined;
    /** How long a module may take to load. Default {@link CONFIG_LOAD_TIMEOUT_MS}. */
    loadTimeoutMs?: number | undefined;
  } = {},
): Promise<SyncConfig> {
  const cwd = options.cwd ?? process.cwd();
  let path: string | null = null;
  if (options.explicitPath) {
    path = resolve(cwd, options.explicitPath);
    if (!existsSync(path)) throw new ConfigError(`The configuration file ${path} (PAYHOOKS_CONFIG) does not exist.`);
    if (!['.js', '.mjs', '.json'].includes(extname(path))) {
      throw new ConfigError(`The configuration file ${path} must end in .js, .mjs or .json.`);
    }
  } else {
    path = CONFIG_FILE_NAMES.map((name) => resolve(cwd, name)).find((candidate) => existsSync(candidate)) ?? null;
  }
  let file: SyncConfigFile = {};
  if (path) {
    const parsed = syncConfigSchema.safeParse(await readConfigFile(path, options.loadTimeoutMs ?? CONFIG_LOAD_TIMEOUT_MS));
    if (!parsed.success) throw new ConfigError(formatIssues(path, parsed.error));
    file = parsed.data;
  }
  const mirror = typeof file.mirror === 'object' ? file.mirror : { enabled: file.mirror };
  const sinks = {
    forward: file.forward ?? [],
    brokers: (file.brokers ?? []).map((entry) => entry.options as BrokerConfig & SinkAccounts),
    connectors: file.connectors ?? [],
    sinks: file.sinks ?? [],
  };
  const names = [
    ...sinks.forward.map((t) => `forward:${t.name}`),
    ...(file.brokers ?? []).map((e) => `${e.kind.prefix}:${e.options.name}`),
    ...sinks.connectors.map((c) => `connector:${c.name}`),
    ...sinks.sinks.map((e) => `${e.kind.prefix}:${e.options.name}`),
  ];
  const repeated = [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
  if (repeated.length) {
    throw new ConfigError(`Sink names must be unique (completion is recorded under them); used more than once: ${repeated.join(', ')}.`);
  }
  return {
    path,
    accounts: file.accounts,
    accountLabels: file.metrics?.accountLabels,
    mirror: {
      enabled: mirror.enabled ?? (typeof file.mirror === 'object' ? true : undefined),
      schema: options.mirrorSchema ?? mirror.schema ?? MIRROR_DEFAULTS.schema,
      eventTypes: mirror.eventTypes,
    },
    reconcile: {
      every: file.reconcile?.every,
      lookback: file.reconcile?.lookback ?? '5d',
      endpointId: file.reconcile?.endpointId,
    },
    ...sinks,
    database: { pooler: file.database?.pooler },
    worker: file.worker ?? {},
    history: file.history ?? {},
    sweeper: file.sweeper,
    alarms: file.alarms,
    issues: file.issues,
    tracing: { exporter: file.tracing?.exporter, trustIncomingContext: file.tracing?.trustIncomingContext },
  };
}
