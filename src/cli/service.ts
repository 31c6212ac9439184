import { nodeAdapter } from '../adapters/node-http.js';
import { createAdminApi } from '../console/admin-api.js';
import { adminTokenWeakness } from '../console/token.js';
import { PayhooksError } from '../errors.js';
import { createPayhooksMetrics } from '../metrics/payhooks-metrics.js';
import { within } from '../internal/within.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import type { Logger } from 'pino';
import { Counter, Registry, collectDefaultMetrics } from 'prom-client';
import type { ApiClient } from '../client/index.js';
import { budgetedClient } from '../service/budgeted-client.js';
import { loadSyncConfig, type SyncConfig } from '../sync/config.js';
import type { ServiceWorkerOptions } from '../sync/worker-config.js';
import { WORKER_DEFAULTS } from '../worker/defaults.js';
import { workerSettings } from '../worker/worker.js';
import { registerMirror } from '../sync/mirror/mirror-sink.js';
import { type RegisteredSinks, registerSinks } from '../sync/sinks.js';
import { type PeriodicReconcile, startPeriodicReconcile } from '../sync/periodic-reconcile.js';
import { parseDuration } from '../internal/duration.js';
import { createPayhooks, type Payhooks, type RegisterHandlers } from '../payhooks.js';
import type { PayhooksDatabase } from '../store/database.js';
import { countEventsNeedingAttention } from '../store/attention-counts.js';
import { SERVICE_DEFAULTS, type ServiceEnv } from '../service/service-defaults.js';
import { newLocalToken, removeServeSession, writeServeSession } from '../service/serve-session.js';
import { withSimulatorSession } from '../service/session-env.js';

/** A running standalone service. */
export interface RunningService {
  readonly url: string;
  readonly hooks: Payhooks<ApiClient>;
  /** Stops accepting connections and lets requests in flight finish, stops the worker, closes the database. */
  close(): Promise<void>;
}

export const WEBHOOK_PATH = '/webhooks';

/** What a service process does: receive, run handlers, or both (the default). */
export type ServiceRole = 'all' | 'receiver' | 'worker';

/** Options of {@link startService} beyond the environment. */
export interface ServiceOptions {
  role?: ServiceRole | undefined;
  /** Registers handlers on the instance before the worker starts (what `--handlers <module>` loads). */
  register?: RegisterHandlers | undefined;
}

/**
 * Starts the standalone service: the receiver at /webhooks, /healthz, /readyz and /metrics. With
 * PAYHOOKS_WEBHOOK_SECRET unset, a running simulator's session file supplies the secret (withSimulatorSession).
 *
 * @example
 * const service = await startService(readServiceEnv(), logger);
 */
export async function startService(givenEnv: ServiceEnv, logger: Logger, options: ServiceOptions = {}): Promise<RunningService> {
  const env = await withSimulatorSession(givenEnv, logger);
  const role = options.role ?? 'all';
  // Read before anything opens: a bad configuration file stops the start with every bad key listed.
  const config = await loadSyncConfig({ explicitPath: env.PAYHOOKS_CONFIG, mirrorSchema: env.PAYHOOKS_MIRROR_SCHEMA });
  const workerOptions = serviceWorkerOptions(config, env);
  const receiving = role !== 'worker';
  if (receiving && !env.PAYHOOKS_WEBHOOK_SECRET?.length) {
    throw new Error(
      'PAYHOOKS_WEBHOOK_SECRET is not set: give the endpoint signing secret (comma-separated during a rotation), or run payhooks simulate --forward-to URL in this folder first.',
    );
  }
  // Checked before anything opens: a weak console token stops the start instead of exposing replay.
  if (env.PAYHOOKS_ADMIN_TOKEN !== undefined) {
    const weakness = adminTokenWeakness(env.PAYHOOKS_ADMIN_TOKEN);
    if (weakness) throw new PayhooksError(`PAYHOOKS_ADMIN_TOKEN is too weak: ${weakness}. Unset it to turn the console off.`);
  }
  // Built before the database opens, so a bad key or a missing PAYHOOKS_API_URL stops the start with its reason.
  // Every process on this database (serve, its worker child, backfill, reconcile) takes from one rate budget.
  // Made first, so that the receiver, the worker and the API client report into them from the start.
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  // The inbox gauges are read at scrapes, which only come once the server listens, after `hooks` exists.
  const metrics = createPayhooksMetrics(registry, { store: () => hooks.ready() });
  const budgeted = env.PAYHOOKS_API_KEY
    ? budgetedClient({ apiKey: env.PAYHOOKS_API_KEY, baseUrl: env.PAYHOOKS_API_URL, logger, metrics })
    : undefined;
  const api = budgeted?.api;
  if (!api) {
    logger.warn(
      "PAYHOOKS_API_KEY is not set: handlers get no API client (ctx.api) and have only the events' own snapshots, so current-state reads (the defence against out-of-order delivery) are off.",
    );
  }
  const hooks = createPayhooks<ApiClient>({
    secret: env.PAYHOOKS_WEBHOOK_SECRET,
    database: { url: env.DATABASE_URL, dataDir: env.PAYHOOKS_DATA_DIR, schema: env.PAYHOOKS_SCHEMA },
    migrations: env.PAYHOOKS_APP_MIGRATIONS,
    appSchema: env.PAYHOOKS_APP_SCHEMA,
    logger,
    api,
    observe: metrics.observe,
    worker: workerOptions,
  });
  const store = await hooks.ready();
  budgeted?.bind(store);
  logger.info({ database: store.kind, schema: store.schema, role }, 'inbox ready');
  const working = role !== 'receiver';
  let periodic: PeriodicReconcile | undefined;
  let sinks: RegisteredSinks | undefined;
  try {
    await reportEventsNeedingAttention(store, logger);
    // A handlers module that throws (an unknown event type in on(), say) stops the start, after closing the database.
    await options.register?.(hooks);
    const userHandlers = hooks.handlerCount;
    const mirror = working && mirrorRuns(config, options.register !== undefined);
    if (mirror) await registerMirror(hooks, { schema: config.mirror.schema, eventTypes: config.mirror.eventTypes });
    if (working) sinks = await registerSinks(hooks, config, { mirrorSchema: mirror ? config.mirror.schema : undefined, logger });
    if (working) {
      const worker = { ...workerSettings(workerOptions), backoff: workerOptions.backoff };
      reportWhatRuns(logger, config, { userHandlers, mirror, api: api !== undefined, sinks: sinks?.descriptions ?? [], worker });
    }
    if (working && hooks.handlerCount === 0) {
      logger.warn(
        'no handlers are registered (--handlers <module>) and the mirror is off in the configuration: the worker is not started, and stored events stay pending until one is',
      );
    }
    if (working && hooks.handlerCount > 0) await hooks.start();
    if (working && config.reconcile.every && api) {
      periodic = startPeriodicReconcile(
        { store, api, endpointId: config.reconcile.endpointId, lookbackMs: parseDuration(config.reconcile.lookback) },
        parseDuration(config.reconcile.every),
        logger.child({ component: 'reconcile' }),
      );
    } else if (working && config.reconcile.every) {
      logger.warn('reconcile.every is set but PAYHOOKS_API_KEY is not: periodic reconciliation needs the API and does not run');
    }
  } catch (err) {
    await hooks.stop().catch(() => undefined);
    await sinks?.close();
    throw err;
  }

  const deliveries = new Counter({
    name: 'payhooks_webhook_responses_total',
    help: 'Webhook deliveries answered, by HTTP status.',
    labelNames: ['status'],
    registers: [registry],
  });
  const handleWebhook = receiving ? hooks.node() : undefined;
  // On the embedded database, this process is the only way in: the command line gets a token of its own.
  const localToken = store.kind === 'pglite' ? newLocalToken() : undefined;
  const admin =
    env.PAYHOOKS_ADMIN_TOKEN !== undefined || localToken !== undefined
      ? nodeAdapter(createAdminApi({ store, token: env.PAYHOOKS_ADMIN_TOKEN, localToken, logger: logger.child({ component: 'console' }) }))
      : undefined;

  // Node checks the header and request timeouts only every 30 s by default; check each second, so they hold.
  const server: Server = createServer({ connectionsCheckingInterval: 1000 }, (req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path === WEBHOOK_PATH && handleWebhook) {
      res.on('finish', () => deliveries.inc({ status: String(res.statusCode) }));
      // The adapter answers its own failures (500) and logs them; its promise never rejects.
      void handleWebhook(req, res);
      return;
    }
    // Off (no token): /admin… falls through to the 404 below, saying nothing about a console.
    if (admin && (path === '/admin' || path?.startsWith('/admin/'))) {
      // Like the webhook adapter: it answers its own failures, reads a body only once the token is checked, and its
      // promise never rejects, also when the client resets the connection mid-body.
      void admin(req, res);
      return;
    }
    if (path === '/healthz') return json(res, 200, { ok: true });
    if (path === '/readyz') {
      void databaseAnswers(store).then((ready) =>
        ready ? json(res, 200, { ready: true }) : json(res, 503, { ready: false, error: { message: 'The database does not answer.' } }),
      );
      return;
    }
    if (path === '/metrics') {
      registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(text);
        })
        .catch(() => json(res, 500, { error: { message: 'Metrics failed.' } }));
      return;
    }
    const message =
      path === WEBHOOK_PATH
        ? 'This process runs with --role worker and receives no webhooks; send them to a process with --role receiver or all.'
        : `Nothing at ${path}; webhooks go to POST ${WEBHOOK_PATH}.`;
    json(res, 404, { error: { message } });
  });
  // Slow-loris guards: a client that trickles its headers or body is cut off well before it ties up the process;
  // the bytes of unfinished bodies are bounded by the adapter's body budget (maxInFlightBodyBytes).
  server.headersTimeout = SERVICE_DEFAULTS.headersTimeoutMs;
  server.requestTimeout = SERVICE_DEFAULTS.requestTimeoutMs;
  server.maxConnections = SERVICE_DEFAULTS.maxConnections;

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(env.PORT, env.HOST, () => resolve());
    });
  } catch (err) {
    // A worker left running without a receiver would keep the process alive, and a supervisor would never
    // restart it: stop what was started, then fail.
    await hooks.stop().catch(() => undefined);
    await sinks?.close();
    const code = (err as NodeJS.ErrnoException).code;
    throw new PayhooksError(
      code === 'EADDRINUSE'
        ? `Cannot listen on ${env.HOST}:${env.PORT}: the port is in use (another payhooks serve?). Stop that process or set PORT.`
        : `Cannot listen on ${env.HOST}:${env.PORT}: ${PayhooksError.describe(err)}`,
      { cause: err },
    );
  }
  const { port } = server.address() as AddressInfo;
  const host = env.HOST === '0.0.0.0' || env.HOST === '::' ? '127.0.0.1' : env.HOST;
  const url = `http://${host}:${port}`;
  logger.info({ url: `${url}${WEBHOOK_PATH}` }, 'payhooks is receiving webhooks');
  // Only where this machine's command line can reach it (all interfaces, or loopback).
  const reachableLocally = ['0.0.0.0', '::', '127.0.0.1'].includes(env.HOST);
  if (localToken && reachableLocally)
    writeServeSession(env.PAYHOOKS_DATA_DIR, { pid: process.pid, url: `http://127.0.0.1:${port}`, token: localToken });

  return {
    url,
    hooks,
    async close() {
      if (localToken) removeServeSession(env.PAYHOOKS_DATA_DIR);
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await periodic?.stop();
      await hooks.stop();
      // After the worker: a handler still running may be waiting on a broker's acknowledgement.
      await sinks?.close();
    },
  };
}

/**
 * The worker's options of `serve`: the configuration file's `worker` key, each variable overriding its key
 * (PAYHOOKS_WORKER_CONCURRENCY, PAYHOOKS_MAX_ATTEMPTS, PAYHOOKS_HANDLER_TIMEOUT_MS). A worker child reads the same
 * environment and file, so it runs with the same settings.
 */
export function serviceWorkerOptions(
  config: Pick<SyncConfig, 'worker'>,
  env: Pick<ServiceEnv, 'PAYHOOKS_WORKER_CONCURRENCY' | 'PAYHOOKS_MAX_ATTEMPTS' | 'PAYHOOKS_HANDLER_TIMEOUT_MS'>,
): ServiceWorkerOptions {
  const fromEnv: ServiceWorkerOptions = {};
  if (env.PAYHOOKS_WORKER_CONCURRENCY !== undefined) fromEnv.concurrency = env.PAYHOOKS_WORKER_CONCURRENCY;
  if (env.PAYHOOKS_MAX_ATTEMPTS !== undefined) fromEnv.maxAttempts = env.PAYHOOKS_MAX_ATTEMPTS;
  if (env.PAYHOOKS_HANDLER_TIMEOUT_MS !== undefined) fromEnv.handlerTimeoutMs = env.PAYHOOKS_HANDLER_TIMEOUT_MS;
  return { ...config.worker, ...fromEnv };
}

/**
 * Whether the Postgres mirror runs: as the configuration file says, and without a word there, when serve has no
 * handlers of its own (so that `payhooks serve` alone syncs, and an app's handlers are not joined by a mirror
 * nobody asked for).
 */
export function mirrorRuns(config: SyncConfig, hasHandlers: boolean): boolean {
  return config.mirror.enabled ?? !hasHandlers;
}

/** One line at start that says what this worker does with events. */
function reportWhatRuns(
  logger: Logger,
  config: SyncConfig,
  runs: {
    userHandlers: number;
    mirror: boolean;
    api: boolean;
    sinks: string[];
    worker: { concurrency: number; maxAttempts: number; handlerTimeoutMs: number; backoff: ServiceWorkerOptions['backoff'] };
  },
): void {
  const { concurrency, maxAttempts, handlerTimeoutMs } = runs.worker;
  const backoff = { ...WORKER_DEFAULTS.backoff, ...runs.worker.backoff };
  const parts = [
    runs.userHandlers ? `${runs.userHandlers} handler${runs.userHandlers === 1 ? '' : 's'} of --handlers` : null,
    runs.mirror
      ? `the Postgres mirror in schema ${config.mirror.schema} (${runs.api ? 'current state read from the API' : "events' own snapshots"})`
      : null,
    ...runs.sinks,
  ].filter((part) => part !== null);
  logger.info(
    {
      config: config.path,
      handlers: runs.userHandlers,
      mirror: runs.mirror ? config.mirror.schema : false,
      sinks: runs.sinks.length,
      reconcileEvery: config.reconcile.every ?? null,
      concurrency,
      maxAttempts,
      handlerTimeoutMs,
      backoff,
    },
    parts.length
      ? `running: ${parts.join(', ')}; ${concurrency} at once, up to ${maxAttempts} attempts each`
      : 'running: nothing (no handlers, mirror off, no sinks)',
  );
}

/** Says at start how many stored events wait for a person, and how to look at them: never a silent backlog. */
async function reportEventsNeedingAttention(store: PayhooksDatabase, logger: Logger): Promise<void> {
  const counts = await countEventsNeedingAttention(store);
  const { dead, invalid, ignored } = counts;
  if (dead + invalid + ignored === 0) {
    logger.info(counts, 'no dead, invalid or ignored events are stored');
    return;
  }
  logger.warn(
    counts,
    `stored events need attention: ${dead} dead, ${invalid} invalid, ${ignored} ignored. ` +
      'List them with `payhooks events list --status dead` (or invalid, ignored) and `payhooks events show <eventId>`; ' +
      'once the cause is fixed (a handler mended or registered), re-queue them with `payhooks replay --status dead` or `payhooks replay <eventId>…`',
  );
}

function json(res: import('node:http').ServerResponse, status: number, body: object): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

/** How long readiness waits for `select 1`; a probe must answer well within a supervisor's timeout. */
const READINESS_TIMEOUT_MS = 2000;

/**
 * Whether the database answers `select 1` in time. When it does not, its connections are discarded, so that the
 * next probe, and the next delivery, use new ones: readiness returns as soon as the database does.
 */
async function databaseAnswers(store: PayhooksDatabase): Promise<boolean> {
  const answered = sql`select 1`.execute(store.db).then(
    () => true,
    () => false,
  );
  const ready = (await within(answered, READINESS_TIMEOUT_MS)) === true;
  if (!ready) store.discardConnections();
  return ready;
}
