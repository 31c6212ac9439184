import { resolve } from 'node:path';
import type { Logger } from 'pino';
import { ApiInputError, createClient } from '../client/index.js';
import { adminTokenWeakness } from '../console/token.js';
import { PayhooksError } from '../errors.js';
import { POOLED_POLL_INTERVAL_MS } from '../worker/defaults.js';
import { createLogger } from '../logger.js';
import { createDefaultScheme } from '../signature/default-scheme.js';
import { loadSyncConfig, type SyncConfig } from '../sync/config.js';
import { type AccountEntry, type ResolvedAccount, resolveAccounts } from '../sync/accounts-config.js';
import { type ServiceWorkerOptions, workerOptionProblem } from '../sync/worker-config.js';
import { EnvironmentError, type EnvVariable, readEnv, variablesOf } from './environment.js';
import { type ServiceConfig, type ServiceRole, serviceConfigSchema, type TracingExporter } from './service-config.js';
import type { ServiceEnv } from './service-defaults.js';
import { withSimulatorSession, withSimulatorSessionAccounts } from './session-env.js';
import { DEFAULT_SESSION_DIR } from './simulator-session.js';

/** Where a service's configuration comes from. */
export interface ServiceConfigSources {
  /** The environment (default `process.env`); blank counts as unset. */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** The configuration file; default `PAYHOOKS_CONFIG`, else payhooks.config.js, .mjs or .json in `cwd`. */
  file?: string | undefined;
  /** The command line's flags. */
  flags?: { role?: ServiceRole | undefined } | undefined;
  /** Where the file and the simulator session are looked for. Default: the working directory. */
  cwd?: string | undefined;
  /**
   * With the secret unset, a live simulator session in this folder supplies it (`payhooks simulate --forward-to`).
   * Default `.payhooks` in `cwd`; false: never.
   */
  simulatorSession?: string | false | undefined;
  /** Says when the simulator session is used or ignored. Default: silent. */
  logger?: Logger | undefined;
}

/** One bad value: `key` names where it was given (a variable, a key of the file, a flag), `message` what is wrong. */
export interface ServiceConfigProblem {
  key: EnvVariable | 'config' | 'worker';
  /** `variable`: a variable's own value; `file`: the configuration file; `rule`: a rule across values. */
  kind: 'variable' | 'file' | 'rule';
  message: string;
}

/** The configuration was refused; `problems` holds each bad value, the message lists them all. */
export class ServiceConfigError extends PayhooksError {
  readonly problems: readonly ServiceConfigProblem[];
  constructor(problems: readonly ServiceConfigProblem[]) {
    super(describeProblems(problems));
    this.problems = problems;
  }
}

/** What {@link checkServiceConfig} found: the configuration when nothing was wrong, else every problem. */
export interface ServiceConfigCheck {
  config: ServiceConfig | undefined;
  problems: ServiceConfigProblem[];
  /** The variables that were valid, as read (before a simulator session supplied the secret or the API). */
  env: Partial<ServiceEnv>;
  /** The configuration file, when it loaded. */
  sync: SyncConfig | undefined;
}

/**
 * Resolves the standalone service's configuration from the environment, the configuration file and the flags,
 * checking everything `startService` needs before anything opens: each variable, each key of the file, the worker's
 * options, the secret (required unless the role is `worker`), the console token's strength, the API key and URL.
 * Throws one {@link ServiceConfigError} naming every bad value (never a secret's value).
 *
 * @example
 * const service = await startService(await resolveServiceConfig({ env: process.env }), { logger });
 */
export async function resolveServiceConfig(sources: ServiceConfigSources = {}): Promise<ServiceConfig> {
  const { config, problems } = await checkServiceConfig(sources);
  if (!config) throw new ServiceConfigError(problems);
  return config;
}

/**
 * What {@link resolveServiceConfig} does, without throwing: every problem, and what was valid (`payhooks doctor`
 * reports each problem on its own line, then probes what it can).
 */
export async function checkServiceConfig(sources: ServiceConfigSources = {}): Promise<ServiceConfigCheck> {
  const source = sources.env ?? process.env;
  const cwd = sources.cwd ?? process.cwd();
  const role = sources.flags?.role ?? 'all';
  const problems: ServiceConfigProblem[] = [];
  const variables = readEachVariable(source, problems);
  let env = variables;

  let sync: SyncConfig | undefined;
  const fileKeysBad = problems.some((p) => p.key === 'PAYHOOKS_CONFIG' || p.key === 'PAYHOOKS_MIRROR_SCHEMA');
  if (!fileKeysBad) {
    try {
      sync = await loadSyncConfig({ explicitPath: sources.file ?? env.PAYHOOKS_CONFIG, mirrorSchema: env.PAYHOOKS_MIRROR_SCHEMA, cwd });
    } catch (err) {
      problems.push({ key: 'config', kind: 'file', message: PayhooksError.describe(err).replace(/^payhooks: /, '') });
    }
  }
  const worker = sync ? workerOf(sync.worker, env, problems) : undefined;

  // A simulator session: its one organization completes the environment; its several (simulate --accounts) are the
  // accounts, unless the configuration file names its own.
  let sessionAccounts: ResolvedAccount[] = [];
  if (!env.PAYHOOKS_WEBHOOK_SECRET?.length && sources.simulatorSession !== false) {
    const dir = resolve(cwd, sources.simulatorSession ?? DEFAULT_SESSION_DIR);
    const logger = sources.logger ?? createLogger({ level: 'silent' });
    if (sync?.accounts) env = await withSimulatorSession(env as ServiceEnv, logger, dir);
    else {
      const fromSession = await withSimulatorSessionAccounts(env as ServiceEnv, logger, dir);
      env = fromSession.env;
      sessionAccounts = fromSession.accounts.map(({ id, secrets, apiKey, apiUrl }) => ({ id, secrets, apiKey, apiUrl, workerShare: 1 }));
    }
  }
  const accounts = sync?.accounts
    ? accountsOf(sync.accounts, env, { source, cwd, receiving: role !== 'worker' }, problems)
    : sessionAccounts;
  ruleProblems(env, role, source, problems, accounts.length > 0);

  if (problems.length || !sync || !worker) return { config: undefined, problems, env: variables, sync };
  const pooler = env.PAYHOOKS_DATABASE_POOLER ?? sync.database.pooler;
  const parsed = serviceConfigSchema.safeParse({
    role,
    receiver: {
      host: env.HOST,
      port: env.PORT,
      secrets: env.PAYHOOKS_WEBHOOK_SECRET,
      trustSimulatedClock: env.PAYHOOKS_TEST_SIMULATED_CLOCK ?? false,
    },
    accounts,
    database: {
      url: env.DATABASE_URL,
      dataDir: env.PAYHOOKS_DATA_DIR,
      schema: env.PAYHOOKS_SCHEMA,
      pooler,
      appMigrations: env.PAYHOOKS_APP_MIGRATIONS,
      appSchema: env.PAYHOOKS_APP_SCHEMA,
    },
    // Behind a transaction pooler polling is the worker's only wake-up: its shorter default, unless the file sets one.
    worker: pooler === 'transaction' ? { ...worker, pollIntervalMs: worker.pollIntervalMs ?? POOLED_POLL_INTERVAL_MS } : worker,
    api: { key: env.PAYHOOKS_API_KEY, url: env.PAYHOOKS_API_URL },
    console: { adminToken: env.PAYHOOKS_ADMIN_TOKEN },
    metrics: { accountLabels: sync.accountLabels },
    logLevel: env.PAYHOOKS_LOG_LEVEL,
    tracing: { exporters: tracingExporters(env, sync.tracing.exporter), trustIncomingContext: sync.tracing.trustIncomingContext },
    configFile: sync.path,
    mirror: sync.mirror,
    reconcile: sync.reconcile,
    history: sync.history,
    sweeper: sync.sweeper,
    alarms: sync.alarms,
    issues: issuesOf(sync.issues, env),
    sinks: { forward: sync.forward, brokers: sync.brokers, connectors: sync.connectors, sinks: sync.sinks },
  });
  // Everything else was checked where it was read; what is left to fail here is serve's own sections of the file.
  if (!parsed.success) {
    for (const issue of parsed.error.issues)
      problems.push({ key: 'config', kind: 'file', message: `${issue.path.join('.')}: ${issue.message}` });
    return { config: undefined, problems, env: variables, sync };
  }
  return { config: parsed.data, problems, env: variables, sync };
}

/**
 * The exporters tracing uses, none when it is off (docs/tracing.md#turning-it-on): `OTEL_SDK_DISABLED=true` turns it
 * off; else `OTEL_TRACES_EXPORTER` decides when set; else the file's `tracing.exporter`; else an OTLP endpoint variable
 * turns it on with `otlp`, as an SDK would by default; else off.
 */
export function tracingExporters(
  env: Pick<
    Partial<ServiceEnv>,
    'OTEL_SDK_DISABLED' | 'OTEL_TRACES_EXPORTER' | 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'
  >,
  file: 'otlp' | 'console' | 'none' | undefined,
): TracingExporter[] {
  if (env.OTEL_SDK_DISABLED) return [];
  const named = env.OTEL_TRACES_EXPORTER ?? (file === undefined ? undefined : [file]);
  if (named) return [...new Set(named.filter((name): name is TracingExporter => name !== 'none'))];
  return env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined ? ['otlp'] : [];
}

/** Each variable of `serve` on its own (the one table in environment.ts), so that one bad variable hides no other. */
function readEachVariable(source: Readonly<Record<string, string | undefined>>, problems: ServiceConfigProblem[]): Partial<ServiceEnv> {
  const env: Record<string, unknown> = {};
  for (const name of variablesOf('serve')) {
    try {
      env[name] = (readEnv('serve', { [name]: source[name] }) as Record<string, unknown>)[name];
    } catch (err) {
      if (!(err instanceof EnvironmentError)) throw err;
      problems.push({ key: name, kind: 'variable', message: err.problems[0] ?? `${name} is not valid` });
    }
  }
  // Each value came out of its own variable's schema just above.
  return env as Partial<ServiceEnv>;
}

/**
 * The worker's options: the file's `worker` key, each variable overriding its key (PAYHOOKS_WORKER_CONCURRENCY,
 * PAYHOOKS_MAX_ATTEMPTS, PAYHOOKS_HANDLER_TIMEOUT_MS, PAYHOOKS_STOP_TIMEOUT_MS). Each is checked on its own where it is read; together once
 * more here (a variable's timeout may outlast the file's lease).
 */
function workerOf(file: ServiceWorkerOptions, env: Partial<ServiceEnv>, problems: ServiceConfigProblem[]): ServiceWorkerOptions {
  const options: ServiceWorkerOptions = { ...file };
  if (env.PAYHOOKS_WORKER_CONCURRENCY !== undefined) options.concurrency = env.PAYHOOKS_WORKER_CONCURRENCY;
  if (env.PAYHOOKS_MAX_ATTEMPTS !== undefined) options.maxAttempts = env.PAYHOOKS_MAX_ATTEMPTS;
  if (env.PAYHOOKS_HANDLER_TIMEOUT_MS !== undefined) options.handlerTimeoutMs = env.PAYHOOKS_HANDLER_TIMEOUT_MS;
  if (env.PAYHOOKS_STOP_TIMEOUT_MS !== undefined) options.stopTimeoutMs = env.PAYHOOKS_STOP_TIMEOUT_MS;
  const problem = workerOptionProblem(options);
  if (problem) {
    problems.push({
      key: 'worker',
      kind: 'file',
      message: `worker.${problem.option} (the file's worker key with the PAYHOOKS_… variables over it): ${problem.message}`,
    });
  }
  return options;
}

/** The rules that need more than one value, or none of a variable's own: what startService relied on being true. */
function ruleProblems(
  env: Partial<ServiceEnv>,
  role: ServiceRole,
  source: Readonly<Record<string, string | undefined>>,
  problems: ServiceConfigProblem[],
  hasAccounts: boolean,
): void {
  const has = (key: EnvVariable) => problems.some((p) => p.key === key);
  if (!has('PAYHOOKS_WEBHOOK_SECRET')) {
    const secrets = env.PAYHOOKS_WEBHOOK_SECRET;
    // With accounts in the file, the secret is the default account's, and optional: each account has its own.
    if (role !== 'worker' && !secrets?.length && !hasAccounts) {
      const onlyCommas = (source.PAYHOOKS_WEBHOOK_SECRET ?? '').trim() !== '';
      problems.push({
        key: 'PAYHOOKS_WEBHOOK_SECRET',
        kind: 'rule',
        message: onlyCommas
          ? 'PAYHOOKS_WEBHOOK_SECRET holds no secret (only commas and spaces): give the endpoint signing secret (comma-separated during a rotation).'
          : 'PAYHOOKS_WEBHOOK_SECRET is not set: give the endpoint signing secret (comma-separated during a rotation), or run payhooks simulate --forward-to URL in this folder first.',
      });
    } else if (secrets?.length) {
      try {
        createDefaultScheme({ secrets });
      } catch (err) {
        problems.push({
          key: 'PAYHOOKS_WEBHOOK_SECRET',
          kind: 'rule',
          message: `PAYHOOKS_WEBHOOK_SECRET is refused by the default scheme: ${PayhooksError.describe(err).replace(/^payhooks: /, '')}`,
        });
      }
    }
  }
  // A weak console token stops the start instead of exposing replay.
  const token = env.PAYHOOKS_ADMIN_TOKEN;
  const weakness = token === undefined ? null : adminTokenWeakness(token);
  if (weakness) {
    problems.push({
      key: 'PAYHOOKS_ADMIN_TOKEN',
      kind: 'rule',
      message: `PAYHOOKS_ADMIN_TOKEN is too weak: ${weakness}. Unset it to turn the console off.`,
    });
  }
  if (env.PAYHOOKS_API_KEY !== undefined && !has('PAYHOOKS_API_URL')) {
    if (env.PAYHOOKS_API_URL === undefined) {
      problems.push({
        key: 'PAYHOOKS_API_URL',
        kind: 'rule',
        message:
          "PAYHOOKS_API_URL is not set: with PAYHOOKS_API_KEY, the client needs the service's address (the spec publishes none). Set it, or unset PAYHOOKS_API_KEY.",
      });
      return;
    }
    // The client's own rule for keys (the same refusal every API user gets), never the key itself.
    try {
      createClient({ apiKey: env.PAYHOOKS_API_KEY, baseUrl: env.PAYHOOKS_API_URL, rateLimit: false, maxRetries: 0 });
    } catch (err) {
      if (!(err instanceof ApiInputError)) throw err;
      const reason = PayhooksError.describe(err).replace(/^Invalid client options: /, '');
      problems.push({ key: 'PAYHOOKS_API_KEY', kind: 'rule', message: `PAYHOOKS_API_KEY is refused by the API client: ${reason}` });
    }
  }
}

/**
 * The file's accounts with their credentials read (from the service's environment, and files relative to `cwd`), each
 * secret list checked by the default scheme and each API key by the client, as the default account's are; an account
 * with a key and no URL of its own uses PAYHOOKS_API_URL. Every problem is reported under `config`.
 */
function accountsOf(
  entries: readonly AccountEntry[],
  env: Partial<ServiceEnv>,
  where: { source: Readonly<Record<string, string | undefined>>; cwd: string; receiving: boolean },
  problems: ServiceConfigProblem[],
): ResolvedAccount[] {
  const { accounts, problems: unread } = resolveAccounts(entries, { env: where.source, cwd: where.cwd, secrets: where.receiving });
  for (const message of unread) problems.push({ key: 'config', kind: 'file', message });
  for (const account of accounts) {
    if (account.secrets.length > 0) {
      try {
        createDefaultScheme({ secrets: account.secrets });
      } catch (err) {
        problems.push({
          key: 'config',
          kind: 'rule',
          message: `accounts ${account.id} secrets: ${PayhooksError.describe(err).replace(/^payhooks: /, '')}`,
        });
      }
    }
    account.apiUrl ??= env.PAYHOOKS_API_URL;
    if (account.apiKey === undefined) continue;
    if (account.apiUrl === undefined) {
      problems.push({
        key: 'config',
        kind: 'rule',
        message: `accounts ${account.id} has an apiKey and no apiUrl: give its apiUrl, or set PAYHOOKS_API_URL.`,
      });
      continue;
    }
    try {
      createClient({ apiKey: account.apiKey, baseUrl: account.apiUrl, rateLimit: false, maxRetries: 0 });
    } catch (err) {
      if (!(err instanceof ApiInputError)) throw err;
      const reason = PayhooksError.describe(err).replace(/^Invalid client options: /, '');
      problems.push({ key: 'config', kind: 'rule', message: `accounts ${account.id} apiKey is refused by the API client: ${reason}` });
    }
  }
  return accounts;
}

/** Every problem as the service refuses them: the variables together, as every command lists them, then the rest. */
function describeProblems(problems: readonly ServiceConfigProblem[]): string {
  const variables = problems.filter((p) => p.kind === 'variable');
  const rest = problems.filter((p) => p.kind !== 'variable');
  const parts: string[] = [];
  if (variables.length) parts.push(`Invalid environment:\n${variables.map((p) => `  - ${p.message}`).join('\n')}`);
  parts.push(...rest.map((p) => p.message));
  return parts.join('\n');
}

/** The file's `issues` section with the notify variables over it (each overrides its own key only). */
function issuesOf(file: Record<string, unknown> | undefined, env: Partial<ServiceEnv>) {
  const notify = file?.notify;
  return {
    ...file,
    notify: {
      ...(notify !== null && typeof notify === 'object' ? notify : {}),
      ...(env.PAYHOOKS_ISSUES_NOTIFY_URL !== undefined ? { url: env.PAYHOOKS_ISSUES_NOTIFY_URL } : {}),
      ...(env.PAYHOOKS_ISSUES_NOTIFY_SECRET !== undefined ? { secret: env.PAYHOOKS_ISSUES_NOTIFY_SECRET } : {}),
    },
  };
}
