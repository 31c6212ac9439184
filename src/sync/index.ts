// The `payhooks/sync` entry: the sync service's building blocks for apps that compose it themselves: the Postgres
// mirror, connectors, HTTP forward and broker sinks, the configuration file, backfill and reconciliation. Each
// export by name; test/public-surface.snapshot.json lists the run-time ones. The root entry (`payhooks`) still
// re-exports the names it had before this entry existed, as the same objects, so that existing imports keep
// working; backfill and reconciliation are here only.
//
// Importing it loads no broker client: `amqplib`, the NATS client and `@redis/client` are loaded when a RabbitMQ, NATS
// or Redis Streams sink first opens (test/entry-loads.test.ts).

// The Postgres mirror
export { MIRROR_DEFAULTS, registerMirror, type MirrorOptions } from './mirror/mirror-sink.js';
export { ensureMirrorAccounts, type MirrorAccountsReport } from './mirror/accounts.js';
export { MIRROR_TABLES, type MirrorTable } from './mirror/states.js';
export { migrateMirror } from '../store/migrate.js';

// The configuration file, and the sinks it names
export { type BrokerConfig, ConfigError, loadSyncConfig, type SyncConfig } from './config.js';
export { registerSinks, type RegisteredSinks } from './sinks.js';

// Sinks as plugins: the interface, the registry of built-in kinds (docs/sinks.md#writing-a-sink-kind)
export { defineSinkKind, registerSink, type Sink, type SinkKind, type SinkSetup, type SinkState } from './sink.js';
export { SINK_KINDS, SINK_KIND_NAMES } from './sink-registry.js';

// Connectors, and what their context offers
export {
  type Connector,
  type ConnectorContext,
  type ConnectorDefinition,
  defineConnector,
  idempotencyKey,
  registerConnector,
  type RegisterConnectorOptions,
} from './connector.js';
export {
  createHttpHelper,
  HTTP_DEFAULT_TIMEOUT_MS,
  HttpConnectionError,
  type HttpHelper,
  type HttpRequest,
  type HttpResponse,
  HttpStatusError,
} from './http-helper.js';
export { readResourceState, type ResourceKind, type ResourceState, type StateSource } from './resource-state.js';

// HTTP forward and brokers
export { FORWARD_DEFAULTS, type ForwardOptions, type ForwardTarget, registerHttpForward } from './http-forward.js';
export { FORWARD_DOCUMENT_VERSION, type ForwardDocument } from './forward-document.js';
export { type BrokerMessage, type BrokerPublisher, type BrokerSinkOptions, registerBrokerSink } from './brokers/broker-sink.js';
export { RABBITMQ_DEFAULTS, rabbitMqPublisher, type RabbitMqOptions } from './brokers/rabbitmq.js';
export { NATS_DEFAULTS, natsPublisher, type NatsOptions } from './brokers/nats.js';

// Backfill and reconciliation (what `payhooks backfill` and `payhooks reconcile` run)
export {
  BACKFILL_DEFAULTS,
  BACKFILL_RESOURCES,
  BackfillConflictError,
  runBackfill,
  type BackfillApi,
  type BackfillOptions,
  type BackfillProgress,
  type BackfillReport,
  type BackfillResource,
  type BackfillResourceReport,
  type BackfillStart,
} from './backfill.js';
export {
  AmbiguousEndpointError,
  deliveryInFlight,
  reconcile,
  RECONCILE_DEFAULTS,
  type ReconcileOptions,
  type ReconcileReport,
  type UnrecoveredEvent,
} from './reconcile.js';

// Proof that the mirror matches the service (what `payhooks verify` runs)
export {
  DRIFT_KINDS,
  type Drift,
  type DriftKind,
  NoMirrorError,
  VERIFY_DEFAULTS,
  VERIFY_RESOURCES,
  type VerifyApi,
  VerifyConflictError,
  verifyMirror,
  type VerifyOptions,
  type VerifyProgress,
  type VerifyReport,
  type VerifyResource,
  type VerifyResourceReport,
  type VerifyStart,
} from './verify/verify-mirror.js';
export type { FieldDiff } from './verify/compare-row.js';
