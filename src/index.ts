// The public entry of payhooks: what users may import. Everything else is internal.

export { createPayhooks, type Payhooks, type PayhooksOptions, type PayhooksWorkerOptions } from './payhooks.js';

export * from './events/index.js';
export * from './signature/index.js';

export {
  createReceiver,
  DEFAULT_ACK_BUDGET_MS,
  DEFAULT_MAX_BODY_BYTES,
  type Receiver,
  type ReceiveRequest,
  type ReceiveResponse,
  type ReceiverOptions,
} from './receiver/receiver.js';
export { expressMiddleware } from './adapters/express.js';
export { fetchHandler } from './adapters/fetch.js';
export { nodeHandler } from './adapters/node-http.js';

export { openDatabase, DEFAULT_DATA_DIR, DEFAULT_SCHEMA, type DatabaseOptions, type PayhooksDatabase } from './store/database.js';
export {
  migrate,
  migrateApp,
  readMigrations,
  MigrationChecksumError,
  UnknownMigrationsError,
  MIGRATIONS_DIR,
  DEFAULT_APP_SCHEMA,
  APP_MIGRATIONS_TABLE,
  type AppMigrationOptions,
  type MigrationFile,
  type MigrationReport,
} from './store/migrate.js';
export {
  getEvent,
  listEvents,
  storeEvent,
  type IncomingEvent,
  type ListEventsFilter,
  type StoredEvent,
  type StoredEventDetail,
} from './store/inbox.js';
export { pruneEvents, replayEvents, SENDER_RETRY_HORIZON_MS } from './store/maintenance.js';
export { EVENT_STATUSES, type EventStatus, type PayhooksTables } from './store/schema.js';

export {
  HandlerRegistry,
  type AnyEventHandler,
  type EventHandler,
  type HandlerContext,
  type HandlerOptions,
  type UnknownTypeHandlerOptions,
} from './worker/handlers.js';
export { UnknownEventTypeError } from './worker/unknown-event-type.js';
export { createWorker, type Worker, type WorkerOptions } from './worker/worker.js';
export { WORKER_DEFAULTS } from './worker/defaults.js';
export { eventRetryDelay, type BackoffOptions } from './worker/retry-delay.js';

export { createLogger, REDACTED_PATHS } from './logger.js';
export type { RegisterHandlers } from './cli/load-handlers.js';

// Simulator
export {
  startSimulator,
  triggerEvent,
  signDelivery,
  buildOpenApiDocument,
  openApiYaml,
  resolveSimulatorOptions,
  seededRandom,
  SimulatorOptionError,
  SIMULATOR_DEFAULTS,
  RETRY_DELAYS_MS,
  REORDER_WINDOW_MS,
  OPENAPI_DOCUMENT_VERSION,
  type Simulator,
  type SimulatorOptions,
  type ResolvedSimulatorOptions,
  type RandomSource,
  type DeliveryAttempt,
  type DeliveryPost,
  type DeliveryRecord,
  type DeliveryRecordFilter,
  type DeliveryStatus,
  type EmittedEvent,
  type OpenApiDocument,
  type Route as SimulatorRoute,
  type TriggerOptions,
  type TriggerResult,
} from './simulator/index.js';

// API client
export * from './client/index.js';
export {
  createPostgresRateLimiter,
  type PostgresRateLimiter,
  type PostgresRateLimiterOptions,
} from './store/rate-budget.js';
