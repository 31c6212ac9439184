import type { RequestHandler } from 'express';
import { BodyBudget } from './internal/limited-body.js';
import type { Kysely } from 'kysely';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { expressAdapter, expressMiddleware } from './adapters/express.js';
import type { ApiClient } from './client/api-client.js';
import { fetchAdapter, fetchHandler } from './adapters/fetch.js';
import { nodeAdapter, nodeHandler } from './adapters/node-http.js';
import { errorResponse } from './internal/error-response.js';
import { createLogger, scrubbingLogger } from './logger.js';
import {
  assertScheme,
  createReceiver,
  DEFAULT_MAX_IN_FLIGHT_BODY_BYTES,
  type DeliveryObservation,
  receiverLimits,
  type Receiver,
  type ReceiveRequest,
  type ReceiveResponse,
} from './receiver/receiver.js';
import { createDefaultScheme, parseSecretList, type SignatureScheme } from './signature/index.js';
import { assertSchemaName, openDatabase, type DatabaseOptions, type PayhooksDatabase } from './store/database.js';
import { type GroupCommitOptions, groupCommitSettings } from './store/group-commit.js';
import { replayEvents } from './store/maintenance.js';
import { DEFAULT_APP_SCHEMA, readMigrations, type MigrationFile } from './store/migrate.js';
import { inboxOpener } from './store/inbox-opener.js';
import { AccountIdError, DEFAULT_ACCOUNT, ensureAccounts, isAccountId } from './store/accounts.js';
import type { ReceiverAdapterOptions } from './adapters/receiver-handler.js';
import type { EventStatus } from './store/schema.js';
import type { EventType } from './events/index.js';
import {
  HandlerRegistry,
  type AnyEventHandler,
  type EventHandler,
  type HandlerOptions,
  type UnknownTypeHandlerOptions,
} from './worker/handlers.js';
import type { WorkerTunable } from './worker/defaults.js';
import { type HistoryOptions, historySettings, startHistoryUpkeep } from './worker/history-upkeep.js';
import { createWorker, type HandlerRunObservation, type Worker, type WorkerOptions, workerSettings } from './worker/worker.js';
import { WorkerEvents } from './worker/worker-events.js';
import { type AdminHandlers, createAdminApi } from './console/admin-api.js';

/** Worker settings of {@link PayhooksOptions}; see {@link WorkerOptions} for each default. */
export type PayhooksWorkerOptions = Pick<WorkerOptions, 'workerId' | Exclude<WorkerTunable, 'appSchema'>>;

/** Options of {@link createPayhooks}; each default is the one the standalone service uses. */
export interface PayhooksOptions<Api = unknown> {
  /**
   * The endpoint's signing secret(s); several during a rotation: an array, or one string separated by commas (as
   * PAYHOOKS_WEBHOOK_SECRET holds them). Required unless `scheme` is given.
   */
  secret?: string | readonly string[] | undefined;
  /** A signature scheme other than the default (e.g. `createStandardWebhooksScheme`). */
  scheme?: SignatureScheme | undefined;
  /**
   * Several organizations in one inbox (docs/accounts.md): each with its own id, secrets (or scheme), API client and
   * worker share. `secret`/`scheme` above, when given, are the default account's (`default`), received on the plain
   * route. With accounts, the receiver adapters take the account from the last segment of the path
   * (`app.post('/webhooks/:account', hooks.express())`) unless told otherwise (`express({ account })`).
   */
  accounts?: readonly PayhooksAccount<Api>[] | undefined;
  /** Where the inbox lives: options for {@link openDatabase}, or an open database. Default: embedded PGlite. */
  database?: DatabaseOptions | PayhooksDatabase | undefined;
  /**
   * Apply pending migrations (payhooks' own, then the app's `migrations`) when the database is first opened.
   * Default true. Either way, a database migrated by a newer payhooks is refused.
   */
  migrate?: boolean | undefined;
  /**
   * A directory of the app's OWN numbered SQL files (`001_paid_invoices.sql`, …; path or file URL), applied after
   * payhooks' own, in `appSchema`, with the same checksums and locking (see {@link migrateApp}). Read when
   * `createPayhooks` is called, so a wrong path fails at once. Default: none.
   */
  migrations?: string | URL | undefined;
  /**
   * The schema of the app's own tables: where `migrations` create them and what `ctx.transaction` puts first on
   * the search path (then `public`), so unqualified names mean the same tables in both. Default `public`.
   */
  appSchema?: string | undefined;
  /** Largest accepted body. Default 1 MiB. */
  maxBodyBytes?: number | undefined;
  /**
   * Bytes of unfinished request bodies held at once across all requests, before any is authenticated; past it
   * the largest body being read is answered 503. Default 32 MiB.
   */
  maxInFlightBodyBytes?: number | undefined;
  /** Storage time allowed in all (a batch, a connection, the statement) before answering 503. Default 5000 ms (the sender allows 10 s). */
  ackBudgetMs?: number | undefined;
  /**
   * Signed deliveries that cannot be stored as events held in the quarantine at most; past it such a delivery is
   * answered 503 and not kept, so the sender keeps it (docs/receiver.md#quarantine). Default 10,000.
   */
  maxQuarantined?: number | undefined;
  /**
   * How concurrent deliveries share one INSERT (group commit): `maxWaitMs` (default 2), `maxRows` (500),
   * `maxConcurrentBatches` (4). Each delivery is answered once the statement holding it has committed.
   */
  groupCommit?: GroupCommitOptions | undefined;
  /**
   * Whether a delivery whose signature holds joins the trace its `traceparent` names. Default false: each delivery's
   * `webhook.receive` span starts a trace of its own, linked to that context (docs/tracing.md#whose-trace-a-delivery-joins).
   */
  trustIncomingTraceContext?: boolean | undefined;
  logger?: Logger | undefined;
  /** The API client handed to handlers as `ctx.api`, for current-state reads. */
  api?: Api | undefined;
  worker?: PayhooksWorkerOptions | undefined;
  /**
   * The history's time partitions and retention (docs/storage.md): `{ partition: 'day', retention: { history: '30d', ledger: 'forever' } }`. Default:
   * daily partitions, kept forever. The worker keeps partitions ready and applies retention.
   */
  history?: HistoryOptions | undefined;
  /**
   * Called with what became of each delivery and each handler run: `createPayhooksMetrics(registry).observe` counts
   * them for Prometheus (docs/metrics.md).
   */
  observe?: PayhooksObserver | undefined;
}

/** One organization of {@link PayhooksOptions.accounts}. */
export interface PayhooksAccount<Api = unknown> {
  /** Lower-case letters, digits, `-` and `_` (it is part of the URL and of every stored key). */
  id: string;
  /** Its endpoints' signing secret(s); several during a rotation. Required unless `scheme` is given. */
  secret?: string | readonly string[] | undefined;
  /** A signature scheme other than the default, for this account. */
  scheme?: SignatureScheme | undefined;
  /** `ctx.api` of its events' handlers: a client with this account's API key. Default: the top-level `api`. */
  api?: Api | undefined;
  /** Its weight in the worker's fair claim (1 to 1000). Default 1: every account with due work gets an equal share. */
  workerShare?: number | undefined;
}

/** Callbacks for metrics: one per answered delivery, one per handler run, one per event that ended dead. */
export interface PayhooksObserver {
  delivery?: ((delivery: DeliveryObservation) => void) | undefined;
  /** One per handler run: a subscriber of the worker's `run:ended` ({@link Payhooks.events}). */
  handlerRun?: ((run: HandlerRunObservation) => void) | undefined;
  /** An event this process's worker recorded dead (a handler gave up, or its last attempt failed): a subscriber of `event:dead`. */
  eventDead?: ((event: { eventType: string }) => void) | undefined;
}

/** The payhooks instance: adapters for any framework, over one inbox. */
export interface Payhooks<Api = unknown> {
  /** Opens (and migrates) the database; adapters call it on first use, so calling it is optional. */
  ready(): Promise<PayhooksDatabase>;
  /** The framework-free receiver call. */
  receive(request: ReceiveRequest): Promise<ReceiveResponse>;
  /** Express 5 middleware: `app.post('/webhooks', hooks.express())`, mounted before `express.json()`. */
  express(options?: ReceiverAdapterOptions): RequestHandler;
  /** A `node:http` handler: `http.createServer(hooks.node())`. */
  node(options?: ReceiverAdapterOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void>;
  /** A Fetch-API handler: `export const POST = hooks.fetch()`. */
  fetch(options?: ReceiverAdapterOptions): (request: Request) => Promise<Response>;
  /** The ids of the accounts this instance receives for (`default` alone without {@link PayhooksOptions.accounts}). */
  readonly accounts: readonly string[];
  /**
   * The operator console's JSON API (docs/admin.md) over this inbox, for requests to `/admin/api/…`: events with
   * filters and pages, one event in full, replay, counts. Off (404) without a token; a request without the token
   * as `Authorization: Bearer …` gets 401. A weak token (under 32 characters, not random enough: see docs/admin.md) throws a RangeError here.
   *
   * @example
   * const admin = hooks.admin({ token: process.env.PAYHOOKS_ADMIN_TOKEN });
   * app.use('/admin/api', admin.express());
   */
  admin(options: {
    token: string | undefined;
    /** The Postgres mirror's schema, whose rows a resource's story shows (`GET /admin/api/story`); unset: none. */
    mirrorSchema?: string | undefined;
  }): AdminHandlers;
  /**
   * Registers a handler for one or several event types; `event.data` is typed from the catalog.
   *
   * @example
   * hooks.on('INVOICE_PAID', async (event, ctx) => {
   *   const invoice = await ctx.api?.invoices.get(event.data.invoiceId);
   * });
   */
  on<K extends EventType>(types: K | readonly K[], handler: EventHandler<K, Api>, options?: HandlerOptions): Payhooks<Api>;
  /**
   * Registers a handler for types outside the catalog (added to the service after this version), spelt out with
   * `{ allowUnknownType: true }`; it receives {@link UnknownEvent}s for them. Without the option an unknown name
   * is refused with a "did you mean …?" error, because a misspelt type leaves the real one unhandled.
   *
   * @example
   * hooks.on('LOYALTY_POINTS_GRANTED', async (event) => grant(event.data), { allowUnknownType: true });
   */
  on(types: string | readonly string[], handler: AnyEventHandler<Api>, options: UnknownTypeHandlerOptions): Payhooks<Api>;
  /** Registers a handler for every event, unknown types included. */
  onAny(handler: AnyEventHandler<Api>, options?: HandlerOptions): Payhooks<Api>;
  /** How many handlers are registered. */
  readonly handlerCount: number;
  /**
   * A Kysely instance for the app's own tables outside handlers (a backfill, a report), on the inbox's
   * database: query-builder table names are qualified with `appSchema`. Inside handlers use `ctx.transaction`,
   * which also records completion. Opens (and migrates) the database like {@link Payhooks.ready}.
   *
   * @example
   * const db = await hooks.appDb<{ paid_invoices: { invoice_id: string; amount: number } }>();
   * const paid = await db.selectFrom('paid_invoices').selectAll().execute();
   */
  appDb<DB>(): Promise<Kysely<DB>>;
  /** Starts the worker in this process (handlers run as events arrive). */
  start(): Promise<Worker>;
  /**
   * What the worker tells as it works, whenever it runs: subscribe before or after {@link Payhooks.start}.
   *
   * @example
   * hooks.events.on('event:dead', ({ eventId, lastError }) => pageOnCall(eventId, lastError));
   */
  readonly events: WorkerEvents;
  /**
   * Stops the worker (running handlers finish, up to `timeoutMs`, default `worker.stopTimeoutMs`) and closes the
   * database if payhooks opened it.
   */
  stop(timeoutMs?: number): Promise<void>;
  /** Re-queues events by id, or every event in a state; resolves to the ids re-queued. */
  replay(which: string | readonly string[] | { status: Exclude<EventStatus, 'processing' | 'pending'> }): Promise<string[]>;
  /** Closes the database if payhooks opened it (after {@link Payhooks.stop} when a worker runs). */
  close(): Promise<void>;
  readonly logger: Logger;
}

/**
 * What a handlers module (`payhooks serve --handlers`) exports: a function that registers handlers on the
 * instance. `ctx.api` is the API client when `PAYHOOKS_API_KEY` is set, undefined otherwise.
 *
 * @example
 * const register: RegisterHandlers = (hooks) => {
 *   hooks.on('INVOICE_PAID', async (event, ctx) => {
 *     const invoice = await ctx.api?.invoices.get(event.data.invoiceId, { signal: ctx.signal });
 *   });
 * };
 * export default register;
 */
export type RegisterHandlers = (hooks: Payhooks<ApiClient>) => void | Promise<void>;

/**
 * Creates a payhooks instance. A mistake in the options throws a TypeError or RangeError: the body limits, the
 * ack budget, the worker's numbers and the app's schema here, the secret (or `scheme`) when a receiver is first
 * asked for (`express()`, `node()`, `fetch()`), so that a worker-only process needs no secret.
 *
 * @example
 * const hooks = createPayhooks({ secret: process.env.PAYHOOKS_WEBHOOK_SECRET, database: { url: process.env.DATABASE_URL } });
 * app.post('/webhooks', hooks.express());
 */
export function createPayhooks<Api = unknown>(options: PayhooksOptions<Api>): Payhooks<Api> {
  // An app's own logger is scrubbed as payhooks' is: what payhooks logs through it carries no personal data.
  const logger = options.logger ? scrubbingLogger(options.logger) : createLogger();
  const limits = receiverLimits(options);
  groupCommitSettings(options.groupCommit ?? {});
  // Checked now, so that a wrong worker option fails here and not at start().
  workerSettings({ ...options.worker, appSchema: options.appSchema });
  const history = historySettings(options.history);
  const accounts = accountsOf(options);
  const { signatureSchemes, adapterOptions, apiForAccount } = accountParts(accounts, options.accounts !== undefined);
  const appSchema = options.appSchema ?? DEFAULT_APP_SCHEMA;
  assertSchemaName(appSchema);
  const appMigrations: MigrationFile[] | undefined = options.migrations === undefined ? undefined : readMigrations(options.migrations);
  const inbox = inboxOpener({
    database: options.database,
    migrate: options.migrate !== false,
    appMigrations,
    appSchema,
    history,
    logger,
  });
  const ready = readyWithAccounts(() => inbox.ready(), accounts, logger);

  const registry = new HandlerRegistry<Api>();
  const events = new WorkerEvents(logger);
  const handlerRun = options.observe?.handlerRun;
  if (handlerRun)
    events.on('run:ended', ({ account, handler, eventType, failed, seconds }) =>
      handlerRun({ account, handler, eventType, failed, seconds }),
    );
  const eventDead = options.observe?.eventDead;
  if (eventDead) events.on('event:dead', ({ eventType }) => eventDead({ eventType }));
  let worker: Worker | undefined;
  let upkeep: { stop(): Promise<void> } | undefined;

  let receiver: Receiver | undefined;
  async function receive(request: ReceiveRequest): Promise<ReceiveResponse> {
    const verifiers = signatureSchemes();
    try {
      // Opened before the check: deliveries arriving together share one receiver, and so one group commit.
      const store = await ready();
      receiver ??= createReceiver({
        store,
        accounts: verifiers,
        ...limits,
        groupCommit: options.groupCommit,
        trustIncomingTraceContext: options.trustIncomingTraceContext,
        logger,
        onStored: () => worker?.wake(),
        onDelivery: options.observe?.delivery,
      });
    } catch (err) {
      logger.error({ err }, 'the inbox database could not be opened; answering 503');
      return errorResponse(503, 'Storage is unavailable; the delivery was not accepted and should be retried.');
    }
    return receiver.receive(request);
  }
  // Adapters need the body limit before the database is open; the rest goes through receive().
  const facade: Receiver = {
    maxBodyBytes: limits.maxBodyBytes,
    bodyBudget: new BodyBudget(options.maxInFlightBodyBytes ?? DEFAULT_MAX_IN_FLIGHT_BODY_BYTES),
    receive,
    logger,
  };

  const close = async () => {
    await inbox.close();
    receiver = undefined;
  };

  const hooks: Payhooks<Api> = {
    logger,
    get handlerCount() {
      return registry.size;
    },
    ready,
    receive,
    accounts: accounts.map((account) => account.id),
    express(adapter) {
      signatureSchemes();
      return expressMiddleware(facade, adapterOptions(adapter));
    },
    node(adapter) {
      signatureSchemes();
      return nodeHandler(facade, adapterOptions(adapter));
    },
    fetch(adapter) {
      signatureSchemes();
      return fetchHandler(facade, adapterOptions(adapter));
    },
    admin({ token, mirrorSchema }) {
      const api = createAdminApi({ store: ready, token, mirrorSchema, logger: logger.child({ component: 'console' }) });
      // The same three adapters as the receiver's: one body reader, one way of answering.
      return { api, node: () => nodeAdapter(api), express: () => expressAdapter(api), fetch: () => fetchAdapter(api) };
    },
    on(types: string | readonly string[], handler: AnyEventHandler<Api>, handlerOptions?: HandlerOptions) {
      // Both overloads end here; the registry checks the types against the catalog at run time either way.
      registry.on(types, handler, handlerOptions as UnknownTypeHandlerOptions);
      return hooks;
    },
    onAny(handler, handlerOptions) {
      registry.onAny(handler, handlerOptions);
      return hooks;
    },
    async start() {
      if (worker) return worker;
      if (registry.size === 0) logger.warn('the worker starts with no handlers registered: every event will be marked ignored');
      worker = createWorker({
        ...options.worker,
        store: await ready(),
        registry,
        logger,
        api: options.api,
        apiForAccount,
        appSchema,
        events,
      });
      await worker.start();
      upkeep = startHistoryUpkeep(await ready(), history, logger);
      return worker;
    },
    async stop(timeoutMs) {
      await upkeep?.stop();
      upkeep = undefined;
      await worker?.stop(timeoutMs);
      worker = undefined;
      await close();
    },
    async replay(which) {
      const store = await ready();
      const ids = await replayEvents(
        store,
        typeof which === 'string' ? { eventIds: [which] } : 'status' in which ? which : { eventIds: which },
      );
      worker?.wake();
      return ids;
    },
    async appDb<DB>() {
      const store = await ready();
      return store.db.withoutPlugins().withSchema(appSchema) as unknown as Kysely<DB>;
    },
    close,
    events,
  };
  return hooks;
}

/**
 * What the accounts give an instance: each account's signature scheme (built on first use, so that a worker-only
 * process needs no secret; a receiver without one fails at mount time), the adapters' default (with `accounts`, each
 * delivery's account is found in its path unless the app says otherwise), and each account's own `ctx.api`.
 */
function accountParts<Api>(accounts: readonly PayhooksAccount<Api>[], several: boolean) {
  let schemes: Record<string, SignatureScheme> | undefined;
  const apis = new Map(accounts.flatMap((account) => (account.api === undefined ? [] : [[account.id, account.api] as const])));
  return {
    signatureSchemes(): Record<string, SignatureScheme> {
      schemes ??= Object.fromEntries(accounts.map((account) => [account.id, accountScheme(account)]));
      return schemes;
    },
    adapterOptions: (given: ReceiverAdapterOptions | undefined): ReceiverAdapterOptions => given ?? (several ? { account: 'path' } : {}),
    apiForAccount: apis.size === 0 ? undefined : (account: string) => apis.get(account),
  };
}

/**
 * The inbox, opened, with the accounts table put in step with `accounts` once, when it is first opened: the database
 * refuses the events of any account it does not hold (migrations/018).
 */
function readyWithAccounts(
  open: () => Promise<PayhooksDatabase>,
  accounts: readonly PayhooksAccount<unknown>[],
  logger: Logger,
): () => Promise<PayhooksDatabase> {
  let synced: Promise<void> | undefined;
  return async () => {
    const store = await open();
    synced ??= ensureAccounts(store, accounts).then(
      (sync) => {
        if (sync.retained.length)
          logger.warn(
            { retained: sync.retained },
            'accounts no longer configured still hold stored events: kept in the database; their deliveries are refused',
          );
      },
      (err: unknown) => {
        synced = undefined;
        throw err;
      },
    );
    await synced;
    return store;
  };
}

/**
 * The accounts of `options`: `accounts`, with the default account first when `secret` or `scheme` is given (or when no
 * `accounts` are, as before accounts existed). Throws a TypeError for a bad or repeated id, or a bad share.
 */
function accountsOf<Api>(options: PayhooksOptions<Api>): PayhooksAccount<Api>[] {
  const given = options.accounts ?? [];
  const hasDefault = options.accounts === undefined || options.secret !== undefined || options.scheme !== undefined;
  const all: PayhooksAccount<Api>[] = [
    ...(hasDefault ? [{ id: DEFAULT_ACCOUNT, secret: options.secret, scheme: options.scheme, api: options.api }] : []),
    ...given,
  ];
  const seen = new Set<string>();
  for (const account of all) {
    if (typeof account?.id !== 'string' || !isAccountId(account.id)) throw new TypeError(new AccountIdError(String(account?.id)).message);
    if (seen.has(account.id))
      throw new TypeError(
        account.id === DEFAULT_ACCOUNT
          ? 'accounts names "default", and secret or scheme is given too: give the default account once.'
          : `accounts names ${JSON.stringify(account.id)} twice.`,
      );
    seen.add(account.id);
    const share = account.workerShare ?? 1;
    if (!Number.isInteger(share) || share < 1 || share > 1000)
      throw new RangeError(
        `accounts[${JSON.stringify(account.id)}].workerShare must be a whole number from 1 to 1000, not ${String(share)}.`,
      );
  }
  if (all.length === 0) throw new TypeError('accounts is empty: give at least one account, or leave it out for the one default account.');
  return all;
}

/** An account's signature scheme: its own, or the default scheme over its secrets (a TypeError says which is missing). */
function accountScheme(account: PayhooksAccount<unknown>): SignatureScheme {
  if (account.scheme !== undefined) {
    assertScheme(account.scheme, account.id === DEFAULT_ACCOUNT ? 'scheme' : `accounts[${JSON.stringify(account.id)}].scheme`);
    return account.scheme;
  }
  if (account.id !== DEFAULT_ACCOUNT && (account.secret === undefined || parseSecretList(account.secret).length === 0))
    throw new TypeError(`payhooks needs the signing secret of account ${JSON.stringify(account.id)}: give its secret (or scheme).`);
  return createDefaultScheme({ secrets: requireSecrets(account.secret) });
}

function requireSecrets(secret: string | readonly string[] | undefined): string[] {
  const secrets = secret === undefined ? [] : parseSecretList(secret);
  if (secrets.length === 0) {
    throw new TypeError(
      'payhooks needs the endpoint signing secret: pass { secret } (or set PAYHOOKS_WEBHOOK_SECRET for `payhooks serve`).',
    );
  }
  return secrets;
}
