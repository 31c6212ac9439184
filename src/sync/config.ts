import { existsSync, readFileSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { PayhooksError } from '../errors.js';
import { EVENT_TYPES, type EventType, isEventType } from '../events/event-types.js';
import { isSchemaName } from '../store/database.js';
import { type DurationRange, durationRangeProblem, formatDuration, parseDuration } from '../internal/duration.js';
import { within } from '../internal/within.js';
import { type Connector, isConnector } from './connector.js';
import { FORWARD_LIMITS, type ForwardTarget, forwardHeaderProblem, ratePerSecondProblem } from './http-forward.js';
import { urlCredentialsProblem } from './http-helper.js';
import { MIRROR_DEFAULTS } from './mirror/mirror-sink.js';
import { type ServiceWorkerOptions, workerConfigSchema } from './worker-config.js';

/** The file names `serve`, `backfill` and `reconcile` look for in the working directory, in this order. */
export const CONFIG_FILE_NAMES = ['payhooks.config.js', 'payhooks.config.mjs', 'payhooks.config.json'] as const;

/** How long a `.js`/`.mjs` configuration file may take to load (its top-level awaits included) before the command gives up. */
export const CONFIG_LOAD_TIMEOUT_MS = 10_000;

const MINUTE = 60_000;
const DAY = 86_400_000;

/**
 * The range of each duration of the file, checked when it is read (docs/configuration.md#durations): a duration
 * is a timer's delay or a span of history, and one out of range either misbehaves (Node fires a timer past
 * 24.8 days after 1 ms) or makes no sense (`0s` between two reconciliations).
 */
export const DURATION_RANGES = {
  /** Each run lists the delivery history: more often than a minute only spends the shared API budget. */
  'reconcile.every': { minMs: MINUTE, maxMs: 24 * DAY },
  'reconcile.lookback': { minMs: MINUTE, maxMs: 90 * DAY },
  'forward.timeout': { minMs: 1000, maxMs: FORWARD_LIMITS.timeoutMs.maxMs },
  'brokers.duplicateWindow': { minMs: 1000, maxMs: 7 * DAY },
} as const satisfies Record<string, DurationRange>;

const DURATION = /^(\d+\s*[dhms]\s*)+$/;

const eventTypes = z
  .array(
    z.string().refine(isEventType, {
      error: (issue) => `${JSON.stringify(issue.input)} is not an event type (expected one of ${EVENT_TYPES.join(', ')})`,
    }),
  )
  .min(1, 'list at least one event type, or leave the key out for all of them');

const mirrorSchema = z.strictObject({
  /** Default true. */
  enabled: z.boolean().optional(),
  schema: z
    .string()
    .refine(isSchemaName, 'expected a schema name of lower-case letters, digits and underscores, starting with a letter or underscore')
    .optional(),
  eventTypes: eventTypes.optional(),
});

/** A duration of the file, in the range {@link DURATION_RANGES} gives its key. */
const durationText = (example: string, key: keyof typeof DURATION_RANGES) =>
  z
    .string()
    .regex(DURATION, `expected a duration such as ${example} (a number with d, h, m or s)`)
    .superRefine((text, ctx) => {
      if (!DURATION.test(text)) return;
      const range = DURATION_RANGES[key];
      const problem = durationRangeProblem(parseDuration(text), range);
      if (problem) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)} is out of range: ${key} ${problem}` });
    });

const reconcileSchema = z.strictObject({
  /** How often serve runs reconciliation, 1m to 24d; unset: never (run `payhooks reconcile` yourself). */
  every: durationText('1h', 'reconcile.every').optional(),
  /** How far back each run looks, 1m to 90d. Default 5d: longer than the sender's retry horizon of 4 d 6½ h. */
  lookback: durationText('5d', 'reconcile.lookback').optional(),
  /** The webhook endpoint whose deliveries count, when the organization has several. */
  endpointId: z.string().min(1).optional(),
});

/** A secret or credential: written out, or `{ env: 'NAME' }` to read it from the environment when the file is loaded. */
const secretText = z.union([z.string().min(1, 'must not be empty'), z.strictObject({ env: z.string().min(1) })]);

const sinkName = z
  .string()
  .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'expected 1 to 63 lower-case letters, digits, ".", "_" or "-", starting with a letter or digit');

// The URL itself is never repeated in a message: it may hold credentials.
const httpUrl = z
  .string()
  .refine((value) => {
    try {
      return ['http:', 'https:'].includes(new URL(value).protocol);
    } catch {
      return false;
    }
  }, 'expected an http:// or https:// URL')
  .superRefine((value, ctx) => {
    const problem = urlCredentialsProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: `the URL ${problem}` });
  });

/** Headers every request carries; each name and value checked, values never repeated (they are often keys). */
const forwardHeaders = z.record(z.string(), z.string()).superRefine((headers, ctx) => {
  for (const [name, value] of Object.entries(headers)) {
    const problem = forwardHeaderProblem(name, value);
    if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
  }
});

const forwardTargetSchema = z.strictObject({
  /** Completion is recorded under `forward:<name>`; keep it when the URL changes. */
  name: sinkName,
  url: httpUrl,
  /** The target's own signing secret (default scheme). */
  secret: secretText,
  /** Default 10s; 1s to 10m. */
  timeout: durationText('10s', 'forward.timeout').optional(),
  concurrency: z.number().int().min(1).max(FORWARD_LIMITS.concurrency.max).optional(),
  /** 0.01 to 10,000; a fraction spaces requests out (0.5: one every 2 s). */
  ratePerSecond: z
    .number()
    .superRefine((rate, ctx) => {
      const problem = ratePerSecondProblem(rate);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
  eventTypes: eventTypes.optional(),
  headers: forwardHeaders.optional(),
});

const rabbitMqSchema = z.strictObject({
  kind: z.literal('rabbitmq'),
  /** Default `rabbitmq`. */
  name: sinkName.optional(),
  url: secretText,
  exchange: z.string().min(1).optional(),
  queue: z.union([z.string().min(1), z.literal(false)]).optional(),
  eventTypes: eventTypes.optional(),
});

const natsSchema = z.strictObject({
  kind: z.literal('nats'),
  /** Default `nats`. */
  name: sinkName.optional(),
  servers: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]),
  stream: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'expected letters, digits, "_" or "-"')
    .optional(),
  subjectPrefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/, 'expected dot-separated tokens such as payhooks.events')
    .optional(),
  duplicateWindow: durationText('2m', 'brokers.duplicateWindow').optional(),
  user: z.string().optional(),
  pass: secretText.optional(),
  token: secretText.optional(),
  eventTypes: eventTypes.optional(),
});

const connectorEntry = z.custom<Connector>(
  isConnector,
  'expected a connector made by defineConnector (connectors need a .js or .mjs configuration file)',
);

/** The sync configuration file's shape (docs/configuration.md#the-sync-configuration-file). */
export const syncConfigSchema = z.strictObject({
  /** The Postgres mirror: `true`/`false`, or its options. Unset: on when serve has no --handlers. */
  mirror: z.union([z.boolean(), mirrorSchema]).optional(),
  reconcile: reconcileSchema.optional(),
  /** HTTP forward targets (docs/sinks.md#http-forward). */
  forward: z.array(forwardTargetSchema).optional(),
  /** Message brokers (docs/sinks.md#message-brokers). */
  brokers: z.array(z.discriminatedUnion('kind', [rabbitMqSchema, natsSchema])).optional(),
  /** Connectors made with defineConnector (docs/sinks.md#connectors). */
  connectors: z.array(connectorEntry).optional(),
  /** The worker of `serve`: `WORKER_DEFAULTS`' names, durations in ms (docs/configuration.md#the-worker-of-serve). */
  worker: workerConfigSchema.optional(),
});
export type SyncConfigFile = z.infer<typeof syncConfigSchema>;

/** The configuration as the service uses it: defaults applied. */
export interface SyncConfig {
  /** Where it came from: a path, or null when there is no file. */
  path: string | null;
  /** The mirror's settings; `enabled` undefined when the file does not say (the caller decides the default). */
  mirror: { enabled: boolean | undefined; schema: string; eventTypes: EventType[] | undefined };
  reconcile: { every: string | undefined; lookback: string; endpointId: string | undefined };
  /** HTTP forward targets, secrets resolved. */
  forward: ForwardTarget[];
  brokers: BrokerConfig[];
  connectors: Connector[];
  /** The worker's options the file sets (the rest default to `WORKER_DEFAULTS`); serve's variables override them. */
  worker: ServiceWorkerOptions;
}

/** A broker of the configuration file, with its name and secrets resolved. */
export type BrokerConfig =
  | {
      kind: 'rabbitmq';
      name: string;
      url: string;
      exchange: string | undefined;
      queue: string | false | undefined;
      eventTypes: EventType[] | undefined;
    }
  | {
      kind: 'nats';
      name: string;
      servers: string | string[];
      stream: string | undefined;
      subjectPrefix: string | undefined;
      duplicateWindowMs: number | undefined;
      user: string | undefined;
      pass: string | undefined;
      token: string | undefined;
      eventTypes: EventType[] | undefined;
    };

/** A configuration file that cannot be read or is not valid; the message names the file and each bad key. */
export class ConfigError extends PayhooksError {}

function formatIssues(path: string, error: z.ZodError): string {
  const lines = error.issues.map((issue) => {
    const key = issue.path.length ? issue.path.join('.') : '(the whole file)';
    return `  - ${key}: ${issue.message}`;
  });
  return `The configuration file ${path} is not valid:\n${lines.join('\n')}`;
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
    throw new ConfigError(`The configuration file ${path} could not be loaded: ${PayhooksError.describe(err)}`, { cause: err });
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
  const unresolved: string[] = [];
  const resolveSecret = (value: z.infer<typeof secretText>, key: string): string => {
    if (typeof value === 'string') return value;
    const found = process.env[value.env];
    if (found) return found;
    unresolved.push(`  - ${key}: the environment variable ${value.env} is not set`);
    return '';
  };
  const sinks = resolveSinks(file, resolveSecret);
  if (unresolved.length) throw new ConfigError(`The configuration file ${path} is not valid:\n${unresolved.join('\n')}`);
  return {
    path,
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
    worker: file.worker ?? {},
  };
}

/** The sinks of a checked file, with defaults named and secrets read; a name used twice is refused. */
function resolveSinks(
  file: SyncConfigFile,
  resolveSecret: (value: z.infer<typeof secretText>, key: string) => string,
): Pick<SyncConfig, 'forward' | 'brokers' | 'connectors'> {
  const forward = (file.forward ?? []).map(
    (target, i): ForwardTarget => ({
      name: target.name,
      url: target.url,
      secret: resolveSecret(target.secret, `forward.${i}.secret`),
      timeoutMs: target.timeout ? parseDuration(target.timeout) : undefined,
      concurrency: target.concurrency,
      ratePerSecond: target.ratePerSecond,
      eventTypes: target.eventTypes as EventType[] | undefined,
      headers: target.headers,
    }),
  );
  const brokers = (file.brokers ?? []).map((broker, i): BrokerConfig => {
    const eventTypes = broker.eventTypes as EventType[] | undefined;
    if (broker.kind === 'rabbitmq') {
      const { exchange, queue } = broker;
      return {
        kind: 'rabbitmq',
        name: broker.name ?? 'rabbitmq',
        url: resolveSecret(broker.url, `brokers.${i}.url`),
        exchange,
        queue,
        eventTypes,
      };
    }
    return {
      kind: 'nats',
      name: broker.name ?? 'nats',
      servers: broker.servers,
      stream: broker.stream,
      subjectPrefix: broker.subjectPrefix,
      duplicateWindowMs: broker.duplicateWindow ? parseDuration(broker.duplicateWindow) : undefined,
      user: broker.user,
      pass: broker.pass ? resolveSecret(broker.pass, `brokers.${i}.pass`) : undefined,
      token: broker.token ? resolveSecret(broker.token, `brokers.${i}.token`) : undefined,
      eventTypes,
    };
  });
  const connectors = file.connectors ?? [];
  const names = [
    ...forward.map((t) => `forward:${t.name}`),
    ...brokers.map((b) => `broker:${b.name}`),
    ...connectors.map((c) => `connector:${c.name}`),
  ];
  const repeated = [...new Set(names.filter((name, i) => names.indexOf(name) !== i))];
  if (repeated.length) {
    throw new ConfigError(`Sink names must be unique (completion is recorded under them); used more than once: ${repeated.join(', ')}.`);
  }
  return { forward, brokers, connectors };
}
