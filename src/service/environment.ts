import { z } from 'zod';
import { PayhooksError } from '../errors.js';
import { LOGGER_DEFAULTS } from '../logger.js';
import { parseSecretList } from '../signature/secret-list.js';
import { DATABASE_DEFAULTS, DATABASE_POOLERS, isSchemaName } from '../store/database.js';
import { DEFAULT_APP_SCHEMA } from '../store/migrate.js';
import { workerOptionProblem } from '../sync/worker-config.js';
import { WORKER_DEFAULTS } from '../worker/defaults.js';
import { SERVICE_DEFAULTS } from './service-defaults.js';

/** The commands whose environment is described here (`events …` subcommands share `events`). */
export const ENV_COMMANDS = [
  'serve',
  'migrate',
  'events',
  'issues',
  'replay',
  'prune',
  'backfill',
  'reconcile',
  'verify',
  'simulate',
  'trigger',
  'send',
  'deliveries',
  'clock',
] as const;
export type EnvCommand = (typeof ENV_COMMANDS)[number];

/** What the help says about one variable, and which commands read it. */
interface VariableDoc<C extends readonly EnvCommand[]> {
  readBy: C;
  description: string;
  /** Its value is never repeated in an error message (secrets, and URLs that may hold a password). */
  secret?: boolean;
}

function variable<S extends z.ZodType, const C extends readonly EnvCommand[]>(schema: S, doc: VariableDoc<C>) {
  return { schema, ...doc };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** What `OTEL_TRACES_EXPORTER` may name (the OpenTelemetry specification's names that payhooks supports). */
const TRACES_EXPORTERS = ['otlp', 'console', 'none'] as const;
const DATABASE_READERS = ['serve', 'migrate', 'events', 'issues', 'replay', 'prune', 'backfill', 'reconcile', 'verify'] as const;
/** The commands that read the service's API and write the mirror. */
const SYNC_COMMANDS = ['serve', 'backfill', 'reconcile', 'verify'] as const;

// `FOO= payhooks …` is the usual way to unset a variable for one command, so blank counts as unset.
function blankIsUnset<S extends z.ZodType>(schema: S) {
  return z.preprocess((value) => (typeof value === 'string' && value.trim() === '' ? undefined : value), schema);
}

/** An issue message that quotes the value it refuses (only used for variables that hold no secret). */
function refusing(expected: string) {
  return (issue: { input?: unknown }) => `${expected}, not ${JSON.stringify(issue.input)}`;
}

/**
 * A number of the worker's, checked by the worker's own rule (so a variable and the file refuse the same values).
 * Without a default here: unset leaves the configuration file's `worker` key, then `WORKER_DEFAULTS`, in charge.
 */
function workerNumber(option: 'concurrency' | 'maxAttempts' | 'handlerTimeoutMs' | 'stopTimeoutMs') {
  return blankIsUnset(
    z
      .string()
      .trim()
      .transform((text, ctx) => {
        if (!/^\d+(\.\d+)?$/.test(text)) {
          ctx.addIssue({ code: 'custom', message: `must be a number, not ${JSON.stringify(text)}` });
          return z.NEVER;
        }
        const value = Number(text);
        const problem = workerOptionProblem({ [option]: value });
        if (problem) {
          ctx.addIssue({ code: 'custom', message: problem.message.replace(/\.$/, '') });
          return z.NEVER;
        }
        return value;
      })
      .optional(),
  );
}

/**
 * Every environment variable payhooks' command line reads: its schema (with its default, taken from the
 * component's defaults object), its help text, and the commands that read it. The help of each command and
 * {@link readEnv} are both generated from this table.
 */
const VARIABLES = {
  PAYHOOKS_WEBHOOK_SECRET: variable(blankIsUnset(z.string().transform(parseSecretList).optional()), {
    readBy: ['serve', 'trigger', 'send'],
    description:
      "endpoint signing secret, comma-separated during a rotation (the first signs trigger's events; serve --role worker needs none)",
    secret: true,
  }),
  DATABASE_URL: variable(blankIsUnset(z.string().trim().optional()), {
    readBy: DATABASE_READERS,
    description: 'PostgreSQL connection string; unset: the embedded PGlite database in PAYHOOKS_DATA_DIR',
    secret: true,
  }),
  PAYHOOKS_DATA_DIR: variable(blankIsUnset(z.string().default(DATABASE_DEFAULTS.dataDir)), {
    readBy: DATABASE_READERS,
    description: 'where the embedded database keeps its files when DATABASE_URL is unset',
  }),
  PAYHOOKS_SCHEMA: variable(
    blankIsUnset(
      z
        .string()
        .refine(isSchemaName, {
          error: refusing('must be a schema name of lower-case letters, digits and underscores, starting with a letter or underscore'),
        })
        .default(DATABASE_DEFAULTS.schema),
    ),
    { readBy: DATABASE_READERS, description: "Postgres schema of payhooks' tables" },
  ),
  PAYHOOKS_DATABASE_POOLER: variable(
    blankIsUnset(
      z.enum(DATABASE_POOLERS, { error: refusing(`must be ${DATABASE_POOLERS.map((p) => JSON.stringify(p)).join(' or ')}`) }).optional(),
    ),
    {
      readBy: DATABASE_READERS,
      description:
        'transaction: DATABASE_URL is a transaction pooler (PgBouncer pool_mode = transaction): no prepared statements, no LISTEN (the worker polls), migrations refused (overrides database.pooler of the config file; default none)',
    },
  ),
  PAYHOOKS_APP_MIGRATIONS: variable(blankIsUnset(z.string().trim().optional()), {
    readBy: ['serve', 'migrate'],
    description: "folder of the app's own numbered SQL migrations, applied after payhooks' own (migrate: the default of --dir)",
  }),
  PAYHOOKS_APP_SCHEMA: variable(
    blankIsUnset(
      z
        .string()
        .refine(isSchemaName, {
          error: refusing('must be a schema name of lower-case letters, digits and underscores, starting with a letter or underscore'),
        })
        .default(DEFAULT_APP_SCHEMA),
    ),
    { readBy: ['serve', 'migrate'], description: "Postgres schema of the app's own tables (its migrations and ctx.transaction)" },
  ),
  PAYHOOKS_API_KEY: variable(blankIsUnset(z.string().trim().optional()), {
    readBy: [...SYNC_COMMANDS, 'trigger', 'deliveries', 'clock'],
    description:
      "sk_… key for current-state reads (trigger: the key for --simulator); unset: handlers and the mirror use the events' own snapshots, and backfill and reconcile refuse to run",
    secret: true,
  }),
  PAYHOOKS_API_URL: variable(
    blankIsUnset(
      z
        .string()
        .trim()
        .refine((value) => /^https?:\/\/[^/]/.test(value) && URL.canParse(value), {
          error: refusing('must be an http or https URL'),
        })
        .optional(),
    ),
    {
      readBy: [...SYNC_COMMANDS, 'trigger', 'deliveries', 'clock'],
      description: "base URL of the service's API (with PAYHOOKS_API_KEY; trigger: the simulator to run flows in)",
    },
  ),
  PAYHOOKS_CONFIG: variable(blankIsUnset(z.string().trim().optional()), {
    readBy: SYNC_COMMANDS,
    description: 'the sync configuration file; unset: payhooks.config.js, .mjs or .json in the working directory, if there is one',
  }),
  PAYHOOKS_MIRROR_SCHEMA: variable(
    blankIsUnset(
      z
        .string()
        .refine(isSchemaName, {
          error: refusing('must be a schema name of lower-case letters, digits and underscores, starting with a letter or underscore'),
        })
        .optional(),
    ),
    { readBy: SYNC_COMMANDS, description: "Postgres schema of the mirror's tables (overrides the config file; default payhooks_mirror)" },
  ),
  PORT: variable(
    blankIsUnset(
      z
        .string()
        .trim()
        .refine((value) => /^\d{1,5}$/.test(value) && Number(value) <= 65535, {
          error: refusing('must be a number from 0 to 65535 (0: any free port)'),
        })
        .transform(Number)
        .default(SERVICE_DEFAULTS.port),
    ),
    { readBy: ['serve'], description: 'port serve listens on; 0: any free port' },
  ),
  HOST: variable(blankIsUnset(z.string().trim().default(SERVICE_DEFAULTS.host)), {
    readBy: ['serve'],
    description: 'interface serve listens on',
  }),
  PAYHOOKS_ADMIN_TOKEN: variable(blankIsUnset(z.string().trim().optional()), {
    readBy: ['serve'],
    description:
      'turns on the operator console (/admin, /admin/api/): the bearer token it asks for: 32 or more random, visible ASCII characters (weak ones refused); unset: off (404)',
    secret: true,
  }),
  PAYHOOKS_ISSUES_NOTIFY_URL: variable(blankIsUnset(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional()), {
    readBy: ['serve'],
    description:
      'where serve POSTs a signed notice of each new or reopened issue (docs/admin.md#notifications; overrides issues.notify.url of the config file); needs PAYHOOKS_ISSUES_NOTIFY_SECRET',
    secret: true,
  }),
  PAYHOOKS_ISSUES_NOTIFY_SECRET: variable(blankIsUnset(z.string().trim().optional()), {
    readBy: ['serve'],
    description: 'the secret those notices are signed with, in the default signature scheme (overrides issues.notify.secret)',
    secret: true,
  }),
  PAYHOOKS_WORKER_CONCURRENCY: variable(workerNumber('concurrency'), {
    readBy: ['serve'],
    description: `events the worker runs at once (overrides worker.concurrency of the config file; default ${WORKER_DEFAULTS.concurrency})`,
  }),
  PAYHOOKS_MAX_ATTEMPTS: variable(workerNumber('maxAttempts'), {
    readBy: ['serve'],
    description: `attempts before an event is dead (overrides worker.maxAttempts of the config file; default ${WORKER_DEFAULTS.maxAttempts})`,
  }),
  PAYHOOKS_HANDLER_TIMEOUT_MS: variable(workerNumber('handlerTimeoutMs'), {
    readBy: ['serve'],
    description: `ms a handler may run before it fails and its signal aborts (overrides worker.handlerTimeoutMs of the config file; default ${WORKER_DEFAULTS.handlerTimeoutMs})`,
  }),
  PAYHOOKS_STOP_TIMEOUT_MS: variable(workerNumber('stopTimeoutMs'), {
    readBy: ['serve'],
    description: `ms a SIGTERM lets running handlers finish before aborting them; serve exits at most 1.5 s later, so keep it under your supervisor's grace period (overrides worker.stopTimeoutMs of the config file; default ${WORKER_DEFAULTS.stopTimeoutMs})`,
  }),
  OTEL_TRACES_EXPORTER: variable(
    blankIsUnset(
      z
        .string()
        .transform((text, ctx) => {
          const names = text.split(',').map((name) => name.trim().toLowerCase());
          const unknown = names.filter((name) => !(TRACES_EXPORTERS as readonly string[]).includes(name));
          if (unknown.length) {
            ctx.addIssue({ code: 'custom', message: `must name otlp, console or none (comma-separated), not ${JSON.stringify(text)}` });
            return z.NEVER;
          }
          return names as (typeof TRACES_EXPORTERS)[number][];
        })
        .optional(),
    ),
    {
      readBy: ['serve'],
      description:
        'turns tracing on (docs/tracing.md): otlp, console, or both comma-separated; none: off (overrides tracing.exporter of the config file); needs the OpenTelemetry SDK packages',
    },
  ),
  OTEL_EXPORTER_OTLP_ENDPOINT: variable(blankIsUnset(z.url({ error: 'must be an http(s) URL' }).optional()), {
    readBy: ['serve'],
    description:
      'the OTLP/HTTP collector (spans to <url>/v1/traces); set, it turns tracing on with otlp unless OTEL_TRACES_EXPORTER says otherwise',
    secret: true,
  }),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: variable(blankIsUnset(z.url({ error: 'must be an http(s) URL' }).optional()), {
    readBy: ['serve'],
    description: 'the OTLP/HTTP traces endpoint itself (…/v1/traces), over OTEL_EXPORTER_OTLP_ENDPOINT; set, it turns tracing on too',
    secret: true,
  }),
  OTEL_SDK_DISABLED: variable(
    blankIsUnset(
      z
        .string()
        .transform((text) => text.trim().toLowerCase() === 'true')
        .optional(),
    ),
    { readBy: ['serve'], description: 'true: tracing off, whatever else says' },
  ),
  PAYHOOKS_TEST_SIMULATED_CLOCK: variable(
    blankIsUnset(
      z
        .string()
        .transform((text) => ['true', '1'].includes(text.trim().toLowerCase()))
        .optional(),
    ),
    {
      readBy: ['serve'],
      description:
        "TEST ONLY. true: measure the signature's timestamp tolerance against the x-payhooks-simulated-time header of a simulator on a manual clock (anyone can send it: never in production)",
    },
  ),
  PAYHOOKS_LOG_LEVEL: variable(
    blankIsUnset(z.enum(LOG_LEVELS, { error: refusing(`must be one of ${LOG_LEVELS.join(', ')}`) }).default(LOGGER_DEFAULTS.level)),
    { readBy: [...SYNC_COMMANDS, 'simulate'], description: 'level of the JSON log lines on stdout' },
  ),
} as const;

type Variables = typeof VARIABLES;
/** The name of an environment variable payhooks reads. */
export type EnvVariable = keyof Variables;
/** Every variable, parsed: defaults applied, secrets split into lists, numbers as numbers. */
export type Env = { [K in EnvVariable]: z.output<Variables[K]['schema']> };
/** The variables a command reads. */
export type VariablesOf<C extends EnvCommand> = {
  [K in EnvVariable]: C extends Variables[K]['readBy'][number] ? K : never;
}[EnvVariable];
/** The parsed environment of one command: only the variables it reads. */
export type EnvOf<C extends EnvCommand> = Pick<Env, VariablesOf<C>>;

const NAMES = Object.keys(VARIABLES) as EnvVariable[];

/** The variables a command reads, in the table's order. */
export function variablesOf(command: EnvCommand): EnvVariable[] {
  return NAMES.filter((name) => (VARIABLES[name].readBy as readonly EnvCommand[]).includes(command));
}

/** The environment was wrong; `problems` holds one line per bad variable, each starting with its name. */
export class EnvironmentError extends PayhooksError {
  readonly problems: readonly string[];
  constructor(problems: readonly string[]) {
    super(`Invalid environment:\n${problems.map((problem) => `  - ${problem}`).join('\n')}`);
    this.problems = problems;
  }
}

/**
 * Reads and checks the variables `command` reads, once; throws one {@link EnvironmentError} that lists every
 * bad variable by name (never the value of a secret). Blank counts as unset.
 *
 * @example
 * const env = readEnv('serve'); // env.PORT: number, env.PAYHOOKS_WEBHOOK_SECRET: string[] | undefined
 */
export function readEnv<C extends EnvCommand>(command: C, source: Readonly<Record<string, string | undefined>> = process.env): EnvOf<C> {
  const env: Record<string, unknown> = {};
  const problems: string[] = [];
  for (const name of variablesOf(command)) {
    const parsed = VARIABLES[name].schema.safeParse(source[name]);
    if (parsed.success) env[name] = parsed.data;
    else problems.push(`${name} ${VARIABLES[name].secret ? 'is not valid' : (parsed.error.issues[0]?.message ?? 'is not valid')}`);
  }
  if (problems.length) throw new EnvironmentError(problems);
  // Each value was checked by its own variable's schema just above.
  return env as EnvOf<C>;
}

/** The environment of `payhooks serve` (every variable it reads, checked). */
export function readServiceEnv(source?: Readonly<Record<string, string | undefined>>): EnvOf<'serve'> {
  return readEnv('serve', source);
}

/**
 * The "Environment:" section of a command's help, made from the table above: each variable the command
 * reads, what it is for, and its default. Without a command: every variable, with the commands that read it.
 */
export function environmentHelp(command?: EnvCommand): string {
  const names = command ? variablesOf(command) : NAMES;
  if (names.length === 0) return '\nEnvironment: none read.';
  const width = Math.max(...names.map((name) => name.length));
  const lines = names.map((name) => {
    const { schema, description, readBy } = VARIABLES[name];
    const fallback = schema.safeParse(undefined);
    const byDefault = fallback.success && fallback.data !== undefined ? ` (default ${String(fallback.data)})` : '';
    const readers = command ? '' : ` [${readBy.join(', ')}]`;
    return `  ${name.padEnd(width)}  ${description}${byDefault}${readers}`;
  });
  return `\nEnvironment${command ? '' : ' (each command reads those in brackets)'}:\n${lines.join('\n')}`;
}
