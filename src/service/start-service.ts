import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { nodeAdapter } from '../adapters/node-http.js';
import type { ApiClient } from '../client/index.js';
import { DeliveryWatch } from '../alarms/delivery-watch.js';
import { createAdminApi } from '../console/admin-api.js';
import { handlerSource } from '../sync/sink-registry.js';
import { issueNotifierFor } from './issue-notifier.js';
import { PayhooksError } from '../errors.js';
import { parseDuration } from '../internal/duration.js';
import type { DatabaseOptions } from '../store/database.js';
import { untilAdmitted } from '../store/until-admitted.js';
import { createLogger } from '../logger.js';
import { createDefaultScheme, parseSecretList, withSimulatedClock } from '../signature/index.js';
import { registerHealthMetrics } from '../metrics/health-metrics.js';
import { createPayhooksMetrics, type PayhooksMetrics } from '../metrics/payhooks-metrics.js';
import type { WorkerEvents } from '../worker/worker-events.js';
import { createPayhooks, type Payhooks, type PayhooksAccount, type RegisterHandlers } from '../payhooks.js';
import { registerMirror } from '../sync/mirror/mirror-sink.js';
import { type GapSweeper, startGapSweeper } from '../sync/gap-sweep.js';
import { type PeriodicReconcile, startPeriodicReconcile } from '../sync/periodic-reconcile.js';
import { type RegisteredSinks, registerSinks } from '../sync/sinks.js';
import { startAlarmMonitor } from './alarm-monitor.js';
import { bindAccountBudgets, payhooksAccounts, type ServiceAccount, serviceAccounts, sweptAccounts } from './service-accounts.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';
import { adminRoute } from './routes/admin-route.js';
import { healthRoutes } from './routes/health-routes.js';
import { metricsRoute } from './routes/metrics-route.js';
import { json, matchRoute, type ServiceRoute } from './routes/service-route.js';
import { WEBHOOK_PATH, webhookAccount, webhookRoute } from './routes/webhook-route.js';
import { writePostgresMarker } from './postgres-marker.js';
import { newLocalToken, removeServeSession, writeServeSession } from './serve-session.js';
import type { ServiceConfig, ServiceRole } from './service-config.js';
import { reportEventsNeedingAttention, reportWhatRuns } from './start-report.js';
import { createVerifyRuns } from './verify-runs.js';

/** A running standalone service. */
export interface RunningService {
  /** Where it listens, e.g. `http://127.0.0.1:8787` (webhooks at `${url}/webhooks`). */
  readonly url: string;
  readonly hooks: Payhooks<ApiClient>;
  /** What /metrics counts: a serve whose worker runs in a child records the child's handler runs here too. */
  readonly metrics: PayhooksMetrics;
  /** Stops accepting connections and lets requests in flight finish, stops the worker, closes the database. */
  close(): Promise<void>;
}

/** Options of {@link startService} beyond its configuration. */
export interface StartServiceOptions {
  /** Where it logs. Default: JSON lines on stdout at `config.logLevel`. */
  logger?: Logger | undefined;
  /** Overrides `config.role` (serve's parent process receives while its worker child runs the handlers). */
  role?: ServiceRole | undefined;
  /** Registers handlers on the instance before the worker starts (what `--handlers <module>` loads). */
  register?: RegisterHandlers | undefined;
  /** Subscribes to the worker's events before the worker starts, so that none is missed (a worker child's reports). */
  observeWorker?: ((events: WorkerEvents) => void) | undefined;
  /** Stops the wait for the database to admit the service (a SIGTERM then): startService rejects with its reason. */
  signal?: AbortSignal | undefined;
}

/**
 * Whether the Postgres mirror runs: as the configuration file says, and without a word there, when the service has
 * no handlers of its own (so that `payhooks serve` alone syncs, and an app's handlers are not joined by a mirror
 * nobody asked for).
 */
export function mirrorRuns(config: Pick<ServiceConfig, 'mirror'>, hasHandlers: boolean): boolean {
  return config.mirror.enabled ?? !hasHandlers;
}

/**
 * The instance's database, once the server admits a session (untilAdmitted: it waits while the server has no free
 * slot). A start stopped meanwhile by `signal`, or refused, closes what the instance opened, so the process can exit.
 */
async function admitted(hooks: Payhooks<ApiClient>, role: ServiceRole, logger: Logger, signal: AbortSignal | undefined) {
  try {
    return await untilAdmitted(() => hooks.ready(), { logger, what: `the ${role === 'all' ? 'service' : role}`, signal });
  } catch (err) {
    await hooks.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Starts the standalone service from a resolved configuration: the receiver at /webhooks, /healthz, /readyz,
 * /metrics and (with a token, or on the embedded database) the console at /admin; the worker with your handlers,
 * the mirror and the sinks; periodic reconciliation, the gap sweeper and the alarms (docs/alerts.md: read by /metrics,
 * GET /admin/api/health and the console). It only composes: every check was made by
 * `resolveServiceConfig`.
 *
 * @example
 * const service = await startService(await resolveServiceConfig({ env: process.env }), { register: (hooks) => hooks.on(…) });
 * // … on SIGTERM:
 * await service.close();
 */
export async function startService(config: ServiceConfig, options: StartServiceOptions = {}): Promise<RunningService> {
  const logger = options.logger ?? createLogger({ level: config.logLevel });
  const role = options.role ?? config.role;
  const receiving = role !== 'worker';
  const working = role !== 'receiver';
  // Made first, so that the receiver, the worker and the API client report into them from the start.
  const registry = new Registry();
  if (config.metrics.processMetrics) collectDefaultMetrics({ register: registry });
  // The inbox gauges are read at scrapes, which only come once the server listens, after `hooks` exists.
  const metrics = createPayhooksMetrics(registry, { store: () => hooks.ready(), accountLabels: config.metrics.accountLabels });
  // Every process on this database (serve, its worker child, backfill, reconcile) takes from one rate budget per account.
  const accounts = serviceAccounts(config, { logger, metrics });
  // The alarms' API probe reads through the default account's client (or the first one's); sweeps, each account's own.
  const api = (accounts.find((account) => account.id === DEFAULT_ACCOUNT) ?? accounts[0])?.client?.api;
  if (!api) {
    logger.warn(
      "PAYHOOKS_API_KEY is not set: handlers get no API client (ctx.api) and have only the events' own snapshots, so current-state reads (the defence against out-of-order delivery) are off.",
    );
  }
  // The receiver's answers, for the silence and signature alarms.
  const watch = new DeliveryWatch();
  const hooks = createPayhooks<ApiClient>({
    accounts: trustingSimulatedClock(payhooksAccounts(accounts), config.receiver.trustSimulatedClock, logger),
    database: openedBy(config.database),
    migrations: config.database.appMigrations,
    appSchema: config.database.appSchema,
    logger,
    api,
    observe: {
      ...metrics.observe,
      delivery(delivery) {
        metrics.observe.delivery?.(delivery);
        watch.delivery(delivery);
      },
    },
    worker: config.worker,
    history: config.history,
    trustIncomingTraceContext: config.tracing.trustIncomingContext,
  });
  options.observeWorker?.(hooks.events);
  const store = await admitted(hooks, role, logger, options.signal);
  bindAccountBudgets(accounts, store);
  logger.info({ database: store.kind, schema: store.schema, role }, 'inbox ready');
  let periodic: PeriodicReconcile | undefined;
  let sweeper: GapSweeper | undefined;
  let sinks: RegisteredSinks | undefined;
  const monitor = startAlarmMonitor({
    store,
    watch,
    receiving,
    api,
    accounts: accounts.map((account) => account.id),
    endpointId: config.reconcile.endpointId,
    thresholds: config.alarms,
    logger: logger.child({ component: 'alarms' }),
  });
  const sweeperEveryMs = sweeperInterval(config, accounts);
  registerHealthMetrics(registry, () => monitor.health(), { sweeperEveryMs, accountLabel: metrics.accountLabel });
  const hasHandlers = options.register !== undefined;
  const verify = createVerifyRuns({
    store,
    api,
    accounts: accounts.map((account) => ({ id: account.id, api: account.client?.api })),
    mirrorSchema: mirrorRuns(config, hasHandlers) ? config.mirror.schema : undefined,
    logger: logger.child({ component: 'console' }),
  });
  const notifier = issueNotifierFor(config.issues.notify, store, logger.child({ component: 'issues' }));
  const stopWorking = async () => {
    await Promise.all([periodic?.stop(), sweeper?.stop(), verify.stop(), monitor.stop(), notifier?.stop()]);
    await hooks.stop();
    // After the worker: a handler still running may be waiting on a broker's acknowledgement.
    await sinks?.close();
  };
  try {
    await reportEventsNeedingAttention(store, logger);
    // A handlers module that throws (an unknown event type in on(), say) stops the start, after closing the database.
    await options.register?.(hooks);
    if (working) ({ sinks, periodic, sweeper } = await startWorking(config, hooks, { logger, api, accounts, hasHandlers }));
  } catch (err) {
    await stopWorking().catch(() => undefined);
    throw err;
  }

  // On the embedded database, this process is the only way in: the command line gets a token of its own.
  const localToken = store.kind === 'pglite' ? newLocalToken() : undefined;
  const consoleParts = { store, token: config.console.adminToken, localToken, verify, mirrorSchema: config.mirror.schema, handlerSource };
  const routes: ServiceRoute[] = [
    webhookRoute(receiving ? hooks.node({ account: webhookAccount }) : undefined, registry),
    ...(consoleParts.token !== undefined || localToken !== undefined
      ? [
          adminRoute(
            nodeAdapter(
              createAdminApi({
                ...consoleParts,
                logger: logger.child({ component: 'console' }),
                health: () => monitor.health(),
              }),
            ),
          ),
        ]
      : []),
    ...healthRoutes(store),
    metricsRoute(registry),
  ];
  // Node checks the header and request timeouts only every 30 s by default; check each second, so they hold.
  const server: Server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
    const route = matchRoute(routes, path);
    if (route) return route.handle(req, res);
    json(res, 404, { error: { message: `Nothing at ${path}; webhooks go to POST ${WEBHOOK_PATH}.` } });
  });
  // Slow-loris guards: a client that trickles its headers or body is cut off well before it ties up the process;
  // the bytes of unfinished bodies are bounded by the adapter's body budget (maxInFlightBodyBytes).
  server.headersTimeout = config.receiver.headersTimeoutMs;
  server.requestTimeout = config.receiver.requestTimeoutMs;
  server.maxConnections = config.receiver.maxConnections;

  const { host, port: givenPort } = config.receiver;
  try {
    await listen(server, host, givenPort);
  } catch (err) {
    // A worker left running without a receiver would keep the process alive, and a supervisor would never
    // restart it: stop what was started, then fail.
    await stopWorking().catch(() => undefined);
    throw err;
  }
  const { port } = server.address() as AddressInfo;
  const url = `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${port}`;
  logger.info({ url: `${url}${WEBHOOK_PATH}` }, 'payhooks is receiving webhooks');
  // Only where this machine's command line can reach it (all interfaces, or loopback).
  const reachableLocally = ['0.0.0.0', '::', '127.0.0.1'].includes(host);
  const { dataDir } = config.database;
  if (localToken && reachableLocally) writeServeSession(dataDir, { pid: process.pid, url: `http://127.0.0.1:${port}`, token: localToken });
  if (config.database.url) writePostgresMarker(dataDir, config.database.url, config.database.schema);

  return {
    url,
    hooks,
    metrics,
    async close() {
      if (localToken) removeServeSession(dataDir);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await stopWorking();
    },
  };
}

/** The worker's side: the mirror and the sinks registered beside the handlers, the worker started, reconciliation. */
async function startWorking(
  config: ServiceConfig,
  hooks: Payhooks<ApiClient>,
  {
    logger,
    api,
    accounts,
    hasHandlers,
  }: { logger: Logger; api: ApiClient | undefined; accounts: readonly ServiceAccount[]; hasHandlers: boolean },
): Promise<{ sinks: RegisteredSinks; periodic: PeriodicReconcile | undefined; sweeper: GapSweeper | undefined }> {
  const userHandlers = hooks.handlerCount;
  const mirror = mirrorRuns(config, hasHandlers);
  if (mirror) await registerMirror(hooks, { schema: config.mirror.schema, eventTypes: config.mirror.eventTypes });
  const sinks = await registerSinks(hooks, config.sinks, { mirrorSchema: mirror ? config.mirror.schema : undefined, logger });
  reportWhatRuns(logger, config, { userHandlers, mirror, api: api !== undefined, sinks: sinks.descriptions });
  if (hooks.handlerCount === 0) {
    logger.warn(
      'no handlers are registered (--handlers <module>) and the mirror is off in the configuration: the worker is not started, and stored events stay pending until one is',
    );
  } else {
    await hooks.start().catch(async (err: unknown) => {
      await sinks.close();
      throw err;
    });
  }
  const { every, lookback, endpointId } = config.reconcile;
  if (every && !api) {
    logger.warn('reconcile.every is set but PAYHOOKS_API_KEY is not: periodic reconciliation needs the API and does not run');
  }
  const periodic =
    every && api
      ? startPeriodicReconcile(
          {
            store: await hooks.ready(),
            api,
            // Each account's history through its own key (docs/accounts.md#operators); without a key, none to read.
            accounts: sweptAccounts(accounts),
            endpointId,
            lookbackMs: parseDuration(lookback),
          },
          parseDuration(every),
          logger.child({ component: 'reconcile' }),
        )
      : undefined;
  const { everyMs, lookbackMs, sample, repair } = config.sweeper;
  const keyed = sweptAccounts(accounts);
  const sweeper =
    everyMs !== null && keyed.length > 0
      ? startGapSweeper(
          {
            store: await hooks.ready(),
            api,
            accounts: keyed,
            mirrorSchema: mirror ? config.mirror.schema : undefined,
            endpointId,
            lookbackMs,
            sample,
            repair,
          },
          everyMs,
          logger.child({ component: 'sweeper' }),
        )
      : undefined;
  return { sinks, periodic, sweeper };
}

/** How often the service sweeps, null where it does not (`payhooks_sweeper_interval_seconds`). */
function sweeperInterval(config: ServiceConfig, accounts: ServiceAccount[]): number | null {
  // The sweeper runs in the process that works, which may be this one's worker child: what the service runs counts.
  const runs = config.role !== 'receiver' && sweptAccounts(accounts).length > 0 && config.sweeper.everyMs !== null;
  return runs ? config.sweeper.everyMs : null;
}

/** What opening the service's database takes, of its configuration (the app's migrations are applied apart). */
function openedBy({ url, dataDir, schema, pooler }: ServiceConfig['database']): DatabaseOptions {
  return { url, dataDir, schema, pooler };
}

/** Listens on `host:port`; a failure (the port in use) is a PayhooksError that says what to do. */
async function listen(server: Server, host: string, port: number): Promise<void> {
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new PayhooksError(
      code === 'EADDRINUSE'
        ? `Cannot listen on ${host}:${port}: the port is in use (another payhooks serve?). Stop that process or set PORT.`
        : `Cannot listen on ${host}:${port}: ${PayhooksError.describe(err)}`,
      { cause: err },
    );
  }
}

/**
 * The accounts as they are, or (test only, `PAYHOOKS_TEST_SIMULATED_CLOCK`) each with the default scheme over its
 * secrets measuring signature age against a manual-clock simulator's time, with a warning that says so.
 */
function trustingSimulatedClock(accounts: PayhooksAccount<ApiClient>[], trust: boolean, logger: Logger): PayhooksAccount<ApiClient>[] {
  if (!trust) return accounts;
  logger.warn(
    'PAYHOOKS_TEST_SIMULATED_CLOCK is on: signature timestamps are checked against the x-payhooks-simulated-time header, which anyone can send. For tests with a manual-clock simulator only, never in production.',
  );
  return accounts.map((account) => {
    const secrets = account.secret === undefined ? [] : parseSecretList(account.secret);
    if (secrets.length === 0 || account.scheme !== undefined) return account;
    return { ...account, secret: undefined, scheme: withSimulatedClock(createDefaultScheme({ secrets })) };
  });
}
