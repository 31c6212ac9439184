import { accessSync, constants, existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { type Command, Option } from 'commander';
import {
  ApiConnectionError,
  ApiInputError,
  ApiResponseValidationError,
  ApiTimeoutError,
  AuthenticationError,
  createClient,
  NotFoundError,
  PermissionDeniedError,
  RateLimitError,
  ServerError,
} from '../client/index.js';
import { DataDirInUseError } from '../store/data-dir-lock.js';
import { realDataDir } from '../store/real-data-dir.js';
import { describeDatabaseUrl } from '../internal/describe-url.js';
import { connectionPassword } from '../store/connection-hosts.js';
import { openDatabase, type PayhooksDatabase } from '../store/database.js';
import { MIRROR_MIGRATIONS_DIR, type MigrationFile, readMigrations } from '../store/migrate.js';
import { recordedMigrations, selectOne } from '../store/database-answers.js';
import { MIRROR_DEFAULTS } from '../sync/mirror/mirror-sink.js';
import { SilentFailure } from './cli-errors.js';
import type { CommandContext } from './command-context.js';
import {
  apiKeyVerdict,
  type CheckResult,
  consoleVerdict,
  describeError,
  type DoctorEnv,
  formatReport,
  keyLabel,
  migrationsVerdict,
  notCreatedMigrations,
  problemsOf,
  scrubbed,
  secretVerdict,
} from './doctor-checks.js';
import { environmentHelp } from '../service/environment.js';
import { countOf, printableJson } from './format.js';
import { readServeSession } from '../service/serve-session.js';
import {
  checkServiceConfig,
  type ServiceConfigCheck,
  type ServiceConfigProblem,
  tracingExporters,
} from '../service/resolve-service-config.js';
import { checkTracingSdk, TRACING_PACKAGES, TracingSetupError } from '../service/start-tracing.js';
import type { ServiceRole } from '../service/service-config.js';
import {
  DEFAULT_SESSION_DIR,
  displayPath,
  probeSimulatorSession,
  readSimulatorSession,
  sessionFilePath,
  type SimulatorSession,
  SimulatorSessionError,
} from '../service/simulator-session.js';

/** How long doctor waits for each thing it asks, so that it always ends in seconds whatever is down. */
export const DOCTOR_TIMEOUTS = {
  databaseConnectMs: 3000,
  databaseQueryMs: 5000,
  apiMs: 3000,
  sessionMs: 2000,
} as const;

/** The options of `payhooks doctor`. */
export interface DoctorOptions {
  json?: boolean;
  role: ServiceRole;
}

/** Doctor's findings: `ok` is false when any check failed. */
export interface DoctorReport {
  ok: boolean;
  checks: CheckResult[];
}

/**
 * Adds `payhooks doctor [--json] [--role R]`: checks the environment, the database and its migrations, the
 * webhook secret, the API key and the API, the console token and the sync configuration, without changing
 * anything, and exits 1 when a check fails.
 */
export function addDoctorCommand(program: Command, ctx: CommandContext): void {
  program
    .command('doctor')
    .description(
      'check the setup serve would start with (environment, database and migrations, webhook secret, API key and API, console token, configuration file) without changing anything; exit 1 on a problem',
    )
    .option('--json', 'print the result as one JSON object')
    .addOption(
      new Option('--role <role>', 'the serve role to check for (worker: no webhook secret needed)')
        .choices(['all', 'receiver', 'worker'])
        .default('all'),
    )
    .addHelpText(
      'after',
      `\nIt reads the environment as payhooks serve does, and ./${DEFAULT_SESSION_DIR}/simulator.json when PAYHOOKS_WEBHOOK_SECRET is unset.\n${environmentHelp('serve')}`,
    )
    .action(async (opts: DoctorOptions) => {
      const report = await runDoctor(process.env, { role: opts.role });
      await ctx.out(opts.json ? printableJson(JSON.stringify(report, null, 2)) : formatReport(report.checks));
      if (!report.ok) throw new SilentFailure();
    });
}

/**
 * Runs every check against `source` (the environment) in `cwd`. Reads only: no migration is applied, nothing is
 * created, and each request or connection has a short time limit.
 *
 * @example
 * const { ok, checks } = await runDoctor(process.env);
 */
export async function runDoctor(
  source: Readonly<Record<string, string | undefined>>,
  options: { role?: ServiceRole; cwd?: string } = {},
): Promise<DoctorReport> {
  const cwd = options.cwd ?? process.cwd();
  const role = options.role ?? 'all';
  // serve's own resolution decides what is refused; doctor puts each problem on its check's line, then probes.
  const checked = await checkServiceConfig({ env: source, cwd, flags: { role } });
  const doctorEnv = doctorEnvOf(checked);
  const { env, problems } = doctorEnv;
  const mirrorSchema = checked.sync?.mirror.schema ?? env.PAYHOOKS_MIRROR_SCHEMA ?? MIRROR_DEFAULTS.schema;
  const [database, [secret, api], tracing] = await Promise.all([
    databaseChecks(doctorEnv, mirrorSchema, cwd),
    secretAndApiChecks(doctorEnv, role, cwd),
    tracingCheck(checked),
  ]);
  const checks = [
    environmentCheck(doctorEnv, cwd),
    ...database,
    secret,
    ...api,
    problems.PAYHOOKS_ADMIN_TOKEN
      ? {
          check: 'console',
          status: 'fail' as const,
          summary: problems.PAYHOOKS_ADMIN_TOKEN,
          fix: 'choose another token as the reason says, or unset PAYHOOKS_ADMIN_TOKEN to turn the console off',
        }
      : consoleVerdict(env.PAYHOOKS_ADMIN_TOKEN),
    configCheck(checked),
    tracing,
  ];
  return { ok: checks.every((check) => check.status !== 'fail'), checks };
}

/** The problems of serve's resolution by the variable they name; the file's go on the config line. */
function doctorEnvOf(checked: ServiceConfigCheck): DoctorEnv {
  const problems: DoctorEnv['problems'] = {};
  for (const { key, message } of checked.problems) {
    if (key === 'config' || key === 'worker') continue;
    problems[key] = problems[key] ? `${problems[key]}; ${message}` : message;
  }
  return { env: checked.env, problems };
}

/** The variables no other check covers: where serve listens, its log level, the app's migrations. */
function environmentCheck({ env, problems }: DoctorEnv, cwd: string): CheckResult {
  const problem = problemsOf(problems, [
    'PORT',
    'HOST',
    'PAYHOOKS_LOG_LEVEL',
    'PAYHOOKS_APP_SCHEMA',
    'PAYHOOKS_APP_MIGRATIONS',
    'PAYHOOKS_WORKER_CONCURRENCY',
    'PAYHOOKS_MAX_ATTEMPTS',
    'PAYHOOKS_HANDLER_TIMEOUT_MS',
    'PAYHOOKS_STOP_TIMEOUT_MS',
  ]);
  if (problem)
    return {
      check: 'environment',
      status: 'fail',
      summary: problem,
      fix: 'correct the variables named (payhooks serve --help lists them)',
    };
  let app = '';
  if (env.PAYHOOKS_APP_MIGRATIONS !== undefined) {
    try {
      const files = readMigrations(resolve(cwd, env.PAYHOOKS_APP_MIGRATIONS));
      app = `; ${files.length} app migrations in ${env.PAYHOOKS_APP_MIGRATIONS} for schema ${env.PAYHOOKS_APP_SCHEMA}`;
    } catch (err) {
      return {
        check: 'environment',
        status: 'fail',
        summary: `PAYHOOKS_APP_MIGRATIONS: ${describeError(err)}`,
        fix: "point PAYHOOKS_APP_MIGRATIONS at the folder of the app's numbered .sql files, or unset it",
      };
    }
  }
  return {
    check: 'environment',
    status: 'ok',
    summary: `serve would listen on ${env.HOST}:${env.PORT}, log level ${env.PAYHOOKS_LOG_LEVEL}${app}`,
  };
}

/** Whether tracing is on, and if so whether the SDK packages it needs load (docs/tracing.md#turning-it-on). */
async function tracingCheck({ env, sync, problems }: ServiceConfigCheck): Promise<CheckResult> {
  const refused = problems.filter((p) => p.key.startsWith('OTEL_'));
  if (refused.length) {
    return {
      check: 'tracing',
      status: 'fail',
      summary: refused.map((p) => p.message).join('; '),
      fix: 'correct the variables named (docs/tracing.md#turning-it-on), or unset them to leave tracing off',
    };
  }
  const exporters = tracingExporters(env, sync?.tracing.exporter);
  if (exporters.length === 0) {
    return { check: 'tracing', status: 'ok', summary: "off (OTEL_TRACES_EXPORTER=otlp or the file's tracing.exporter turns it on)" };
  }
  try {
    await checkTracingSdk(exporters);
    return { check: 'tracing', status: 'ok', summary: `on: spans to ${exporters.join(' and ')}; the OpenTelemetry SDK packages load` };
  } catch (err) {
    if (!(err instanceof TracingSetupError)) throw err;
    return {
      check: 'tracing',
      status: 'fail',
      summary: describeError(err).replace(/ Install the OpenTelemetry.*$/, ''),
      fix: `npm install ${TRACING_PACKAGES.filter((p) => !p.includes('otlp') || exporters.includes('otlp')).join(' ')}, or unset OTEL_TRACES_EXPORTER`,
    };
  }
}

function configCheck({ problems, sync }: ServiceConfigCheck): CheckResult {
  const found = problems.filter((p: ServiceConfigProblem) =>
    ['config', 'worker', 'PAYHOOKS_CONFIG', 'PAYHOOKS_MIRROR_SCHEMA'].includes(p.key),
  );
  if (found.length || !sync) {
    // The file's error puts each bad key on a line of its own; the report keeps to one line per check.
    const [head = '', ...keys] = found
      .map((p) => p.message)
      .join('\n')
      .split('\n')
      .map((line) => line.trim().replace(/^- /, ''))
      .filter(Boolean);
    return {
      check: 'config',
      status: 'fail',
      summary: keys.length ? `${head} ${keys.join('; ')}` : head || 'the configuration file was not read',
      fix: 'correct the file (docs/configuration.md#the-sync-configuration-file) or the variables named; serve, backfill and reconcile refuse it as it is',
    };
  }
  if (!sync.path)
    return { check: 'config', status: 'ok', summary: 'no configuration file (payhooks.config.js, .mjs or .json): the defaults apply' };
  const parts = [
    `mirror ${sync.mirror.enabled === undefined ? 'when serve has no --handlers' : sync.mirror.enabled ? 'on' : 'off'} (schema ${sync.mirror.schema})`,
    countOf(sync.forward.length, 'forward target'),
    countOf(sync.brokers.length, 'broker'),
    countOf(sync.connectors.length, 'connector'),
    ...(sync.sinks.length ? [countOf(sync.sinks.length, 'other sink')] : []),
  ];
  if (sync.reconcile.every) parts.push(`reconcile every ${sync.reconcile.every}`);
  return { check: 'config', status: 'ok', summary: `${displayPath(sync.path)} is valid: ${parts.join(', ')}` };
}

/** The database line, then the migrations lines when the database could be opened (or does not exist yet). */
async function databaseChecks({ env, problems }: DoctorEnv, mirrorSchema: string, cwd: string): Promise<CheckResult[]> {
  const problem = problemsOf(problems, ['DATABASE_URL', 'PAYHOOKS_DATA_DIR', 'PAYHOOKS_SCHEMA']);
  if (problem) {
    return [
      { check: 'database', status: 'fail', summary: `${problem}, so the migrations were not checked`, fix: 'correct the variables named' },
    ];
  }
  const schema = env.PAYHOOKS_SCHEMA!;
  const files = readMigrations();

  if (env.DATABASE_URL !== undefined) {
    const url = env.DATABASE_URL;
    const label = describeDatabaseUrl(url);
    const secrets = [connectionPassword(url), url];
    let store: PayhooksDatabase | undefined;
    try {
      store = await openDatabase({
        url,
        schema,
        poolSize: 1,
        connectionTimeoutMs: DOCTOR_TIMEOUTS.databaseConnectMs,
        queryTimeoutMs: DOCTOR_TIMEOUTS.databaseQueryMs,
      });
      await selectOne(store);
      return [
        { check: 'database', status: 'ok', summary: `PostgreSQL at ${label} answers` },
        ...(await migrationChecks(store, mirrorSchema, files, secrets)),
      ];
    } catch (err) {
      return [
        {
          check: 'database',
          status: 'fail',
          summary: `PostgreSQL at ${label} cannot be used: ${scrubbed(describeError(err), secrets)}; the migrations were not checked`,
          fix: "check that the server runs and that DATABASE_URL's host, port, user, password and database are right",
        },
      ];
    } finally {
      await store?.close();
    }
  }

  const dataDir = env.PAYHOOKS_DATA_DIR!;
  if (dataDir.startsWith('memory://')) {
    return [
      {
        check: 'database',
        status: 'warn',
        summary: `embedded (PGlite) in memory (${dataDir}): every stored event is lost when serve stops`,
        fix: 'set PAYHOOKS_DATA_DIR to a folder, or DATABASE_URL to a PostgreSQL server',
      },
    ];
  }
  // By its real path, as serve and the other commands open and lock it.
  let path: string;
  try {
    path = realDataDir(dataDir, cwd);
  } catch (err) {
    return [
      {
        check: 'database',
        status: 'fail',
        summary: `embedded (PGlite) at ${dataDir} cannot be reached: ${describeError(err)}; the migrations were not checked`,
        fix: 'set PAYHOOKS_DATA_DIR to a folder this user may read and write, or DATABASE_URL to a PostgreSQL server',
      },
    ];
  }
  const shown = displayPath(path);
  if (!existsSync(join(path, 'PG_VERSION'))) return notCreatedDatabase(path, shown, files);

  let store: PayhooksDatabase;
  try {
    store = await openDatabase({ dataDir: path, schema });
  } catch (err) {
    if (err instanceof DataDirInUseError) return [await inUse(err, shown)];
    return [
      {
        check: 'database',
        status: 'fail',
        summary: `embedded (PGlite) at ${shown} cannot be opened: ${describeError(err)}; the migrations were not checked`,
        fix: 'point PAYHOOKS_DATA_DIR at a folder payhooks created, or at a new one',
      },
    ];
  }
  try {
    return [
      { check: 'database', status: 'ok', summary: `embedded (PGlite) at ${shown}` },
      ...(await migrationChecks(store, mirrorSchema, files, [])),
    ];
  } finally {
    await store.close();
  }
}

/**
 * The embedded database held by another process. Not a broken setup (serve holds it while it runs), but doctor
 * cannot look inside; when the holder left a serve session, say whether that serve answers, and where.
 */
async function inUse(err: DataDirInUseError, shown: string): Promise<CheckResult> {
  const session = readServeSession(err.dataDir);
  let answer = '';
  if (session && (err.holderPid === undefined || session.pid === err.holderPid)) {
    try {
      const response = await fetch(`${session.url}/readyz`, { signal: AbortSignal.timeout(DOCTOR_TIMEOUTS.sessionMs) });
      answer = `; serve answers at ${session.url} (/readyz ${response.status === 200 ? 'ready' : `${response.status}`})`;
    } catch {
      answer = `; its session names ${session.url}, where nothing answers`;
    }
  }
  return {
    check: 'database',
    status: 'warn',
    summary: `embedded (PGlite) at ${shown} is in use by process ${err.holderPid ?? '(unknown)'} (a running serve?)${answer}, so the migrations were not checked`,
    fix: 'stop that process and run doctor again to check them (events and replay work beside a running serve; migrate and prune wait for it to stop)',
  };
}

/** An embedded database that does not exist yet: fine when serve or migrate can create it there. */
function notCreatedDatabase(path: string, shown: string, files: readonly MigrationFile[]): CheckResult[] {
  if (existsSync(path) && (!statSync(path).isDirectory() || readdirSync(path).length > 0)) {
    return [
      {
        check: 'database',
        status: 'fail',
        summary: `PAYHOOKS_DATA_DIR ${shown} exists but holds no database (no PG_VERSION)`,
        fix: 'point PAYHOOKS_DATA_DIR at an empty or new folder',
      },
    ];
  }
  let existing = path;
  while (!existsSync(existing) && dirname(existing) !== existing) existing = dirname(existing);
  try {
    accessSync(existing, constants.W_OK);
  } catch {
    return [
      {
        check: 'database',
        status: 'fail',
        summary: `embedded (PGlite) at ${shown} does not exist yet, and ${displayPath(existing)} is not writable, so serve cannot create it`,
        fix: 'set PAYHOOKS_DATA_DIR to a folder this user may write, or DATABASE_URL',
      },
    ];
  }
  return [
    { check: 'database', status: 'ok', summary: `embedded (PGlite) at ${shown}: not created yet (serve or payhooks migrate creates it)` },
    notCreatedMigrations('migrations', files),
  ];
}

/** payhooks' own migrations, then the mirror's once its schema exists (a serve without --handlers, or backfill, made it). */
async function migrationChecks(
  store: PayhooksDatabase,
  mirrorSchema: string,
  files: readonly MigrationFile[],
  secrets: readonly (string | undefined)[],
): Promise<CheckResult[]> {
  const targets = [
    { check: 'migrations', schema: store.schema, table: 'schema_migrations', shipped: files, always: true },
    {
      check: 'mirror-migrations',
      schema: mirrorSchema,
      table: 'mirror_migrations',
      shipped: readMigrations(MIRROR_MIGRATIONS_DIR),
      always: false,
    },
  ];
  const results: CheckResult[] = [];
  for (const { check, schema, table, shipped, always } of targets) {
    try {
      const recorded = await recordedMigrations(store, schema, table);
      if (recorded.present || always) results.push(migrationsVerdict(check, schema, recorded, shipped));
    } catch (err) {
      results.push({
        check,
        status: 'fail',
        summary: `${schema}.${table} cannot be read: ${scrubbed(describeError(err), secrets)}`,
        fix: "check the database user's rights on that schema",
      });
    }
  }
  return results;
}

/**
 * The secret line, then the API key and API lines. With PAYHOOKS_WEBHOOK_SECRET unset, serve takes the secret
 * (and, with no key and URL either, the API) from a live simulator session: doctor looks where serve looks.
 */
async function secretAndApiChecks(doctorEnv: DoctorEnv, role: ServiceRole, cwd: string): Promise<[CheckResult, CheckResult[]]> {
  const { env } = doctorEnv;
  let secret: CheckResult;
  let session: SimulatorSession | undefined;
  // Whether the secret is refused is serve's resolution's to say; the lines below add what doctor finds out.
  const problem = doctorEnv.problems.PAYHOOKS_WEBHOOK_SECRET;
  const refused = (summary: string): CheckResult => ({ check: 'webhook-secret', status: 'fail', summary, fix: SET_SECRET });
  if (env.PAYHOOKS_WEBHOOK_SECRET !== undefined) {
    secret = problem ? refused(problem) : secretVerdict(env.PAYHOOKS_WEBHOOK_SECRET);
  } else {
    ({ secret, session } = await sessionSecret(role, cwd));
    if (problem && secret.status !== 'fail') secret = refused(problem);
  }
  const apiFromSession = session !== undefined && env.PAYHOOKS_API_KEY === undefined && env.PAYHOOKS_API_URL === undefined;
  const key = apiFromSession ? session?.apiKey : env.PAYHOOKS_API_KEY;
  const url = apiFromSession ? session?.url : env.PAYHOOKS_API_URL;
  const from = apiFromSession
    ? `the simulator session (${displayPath(sessionFilePath(join(cwd, DEFAULT_SESSION_DIR)))})`
    : 'PAYHOOKS_API_KEY';
  return [secret, await apiChecks(doctorEnv, key, url, from)];
}

const SET_SECRET =
  "set it to the endpoint's signing secret (GET /v1/webhooks/{id}/secret), two separated by a comma during a rotation, or run payhooks simulate --forward-to URL in this folder";

async function sessionSecret(role: ServiceRole, cwd: string): Promise<{ secret: CheckResult; session?: SimulatorSession }> {
  const check = 'webhook-secret';
  const dir = join(cwd, DEFAULT_SESSION_DIR);
  const file = displayPath(sessionFilePath(dir));
  const unneeded = role === 'worker';
  const notSet = unneeded ? 'PAYHOOKS_WEBHOOK_SECRET is not set (serve --role worker needs none)' : 'PAYHOOKS_WEBHOOK_SECRET is not set';
  const setIt = SET_SECRET;
  let session: SimulatorSession | undefined;
  try {
    session = await readSimulatorSession(dir);
  } catch (err) {
    if (!(err instanceof SimulatorSessionError)) throw err;
    const summary = `${notSet}, and the simulator session cannot be used: ${describeError(err)}`;
    return {
      secret: unneeded ? { check, status: 'warn', summary, fix: `delete ${file}` } : { check, status: 'fail', summary, fix: setIt },
    };
  }
  if (!session) {
    if (unneeded) return { secret: { check, status: 'ok', summary: notSet } };
    return {
      secret: {
        check,
        status: 'fail',
        summary: `${notSet} and there is no simulator session (${file}), so serve refuses to start`,
        fix: setIt,
      },
    };
  }
  const probe = await probeSimulatorSession(session, DOCTOR_TIMEOUTS.sessionMs);
  if (!probe.live) {
    const summary = `${notSet}, and the simulator session in ${file} is stale: ${probe.reason}`;
    const fix = 'run payhooks simulate --forward-to URL again in this folder, or set PAYHOOKS_WEBHOOK_SECRET';
    return { secret: { check, status: unneeded ? 'warn' : 'fail', summary, fix } };
  }
  return {
    secret: { check, status: 'ok', summary: `from the simulator session in ${file}: endpoint ${session.endpointId} of ${session.url}` },
    session,
  };
}

/** The key's form, then one cheap authenticated read: does the service answer there, and accept the key? */
async function apiChecks({ problems }: DoctorEnv, key: string | undefined, url: string | undefined, from: string): Promise<CheckResult[]> {
  const keyProblem = problemsOf(problems, ['PAYHOOKS_API_KEY']);
  if (keyProblem) return [{ check: 'api-key', status: 'fail', summary: keyProblem, fix: 'correct PAYHOOKS_API_KEY' }];
  const keyResult = apiKeyVerdict(key, from);
  const urlProblem = problemsOf(problems, ['PAYHOOKS_API_URL']);
  if (urlProblem)
    return [keyResult, { check: 'api', status: 'fail', summary: urlProblem, fix: "set PAYHOOKS_API_URL to the service's base URL" }];
  if (key === undefined) {
    if (url === undefined) return [keyResult];
    return [
      keyResult,
      {
        check: 'api',
        status: 'warn',
        summary: `PAYHOOKS_API_URL is set (${url}) but unused without PAYHOOKS_API_KEY`,
        fix: 'set PAYHOOKS_API_KEY, or unset PAYHOOKS_API_URL',
      },
    ];
  }
  if (url === undefined) {
    return [
      keyResult,
      {
        check: 'api',
        status: 'fail',
        summary:
          "PAYHOOKS_API_URL is not set: the client needs the service's address (the spec publishes none), so serve refuses to start with a key",
        fix: "set PAYHOOKS_API_URL to the service's base URL",
      },
    ];
  }
  let client: ReturnType<typeof createClient>;
  try {
    client = createClient({ apiKey: key, baseUrl: url, maxRetries: 0, timeoutMs: DOCTOR_TIMEOUTS.apiMs, rateLimit: false });
  } catch (err) {
    // The key line already says what is wrong with a key the client refuses to send.
    if (err instanceof ApiInputError) return [keyResult];
    throw err;
  }
  return [keyResult, await apiAnswer(client, key, url)];
}

async function apiAnswer(client: ReturnType<typeof createClient>, key: string, url: string): Promise<CheckResult> {
  const check = 'api';
  const who = keyLabel(key);
  const started = performance.now();
  try {
    // GET /v1/invoices is in the spec, needs the key, and with take=1 costs the service almost nothing.
    await client.invoices.list({ take: 1 });
    return {
      check,
      status: 'ok',
      summary: `${url} answers and accepts ${who} (GET /v1/invoices in ${Math.round(performance.now() - started)} ms)`,
    };
  } catch (err) {
    const reason = scrubbed(describeError(err), [key]);
    if (err instanceof AuthenticationError) {
      return {
        check,
        status: 'fail',
        summary: `${url} refused ${who} (401): the key is wrong, revoked, or of the other environment`,
        fix: "set PAYHOOKS_API_KEY to the organization's current secret key for this address",
      };
    }
    if (err instanceof PermissionDeniedError) {
      return {
        check,
        status: 'fail',
        summary: `${url} accepts ${who} but forbids reading invoices (403)`,
        fix: 'use a key with read access',
      };
    }
    if (err instanceof NotFoundError) {
      return {
        check,
        status: 'fail',
        summary: `${url} answers 404 to GET /v1/invoices: it is not the service's API, or not its base URL`,
        fix: "set PAYHOOKS_API_URL to the service's base URL (the part before /v1)",
      };
    }
    if (err instanceof RateLimitError || err instanceof ServerError) {
      return {
        check,
        status: 'warn',
        summary: `${url} answers ${err.status ?? 'an error'} for now, so the key was not checked: ${reason}`,
        fix: 'run doctor again in a minute',
      };
    }
    if (err instanceof ApiTimeoutError) {
      return {
        check,
        status: 'fail',
        summary: `${url} did not answer within ${DOCTOR_TIMEOUTS.apiMs / 1000} s`,
        fix: 'check PAYHOOKS_API_URL and the network',
      };
    }
    if (err instanceof ApiConnectionError) {
      return {
        check,
        status: 'fail',
        summary: `nothing answers at ${url}: ${reason}`,
        fix: 'check PAYHOOKS_API_URL, and that the service (or payhooks simulate) runs there',
      };
    }
    if (err instanceof ApiResponseValidationError) {
      return {
        check,
        status: 'fail',
        summary: `${url} answers, but not as the service does: ${reason}`,
        fix: "check that PAYHOOKS_API_URL is the service's base URL",
      };
    }
    return {
      check,
      status: 'fail',
      summary: `GET /v1/invoices at ${url} failed: ${reason}`,
      fix: 'check PAYHOOKS_API_URL and PAYHOOKS_API_KEY',
    };
  }
}
