// The root entry of payhooks (`import … from 'payhooks'`): what most apps need, each export by name, so that
// growing the public surface is a visible decision (test/public-surface.snapshot.json lists the run-time
// exports). The API client, the sync service, the simulator and the test helpers have their own entries
// (`payhooks/client`, `payhooks/sync`, `payhooks/simulator`, `payhooks/testing`); nothing else is public
// (src/internal/README.md).

// The library in one call
export {
  createPayhooks,
  type Payhooks,
  type PayhooksObserver,
  type PayhooksOptions,
  type PayhooksWorkerOptions,
  type RegisterHandlers,
} from './payhooks.js';
export { PayhooksError } from './errors.js';
export { createLogger, REDACTED_PATHS } from './logger.js';

// Signatures
export {
  createDefaultScheme,
  createHmacScheme,
  createStandardWebhooksScheme,
  DEFAULT_TOLERANCE_SECONDS,
  WebhookVerificationError,
  type DefaultSchemeOptions,
  type HeaderMap,
  type HmacSchemeOptions,
  type SignatureScheme,
  type SignedParts,
  type SignInput,
  type StandardWebhooksSchemeOptions,
  type VerificationFailureReason,
  type VerifiedDelivery,
  type VerifyInput,
} from './signature/index.js';

// Events: the catalog, parsing, and every payload type
export {
  EVENT_DATA_SCHEMAS,
  EVENT_TYPES,
  EventParseError,
  envelopeSchema,
  isEventType,
  parseEvent,
  parseEventOrThrow,
  resourceKeyOf,
  type BankAccount,
  type CardDetail,
  type Customer,
  type CustomerEventData,
  type Dispute,
  type DisputeEventData,
  type DisputeResponse,
  type Envelope,
  type EventIssue,
  type EventMap,
  type EventType,
  type Invoice,
  type InvoiceCustomer,
  type InvoiceEventData,
  type InvoiceItem,
  type Organization,
  type ParseEventResult,
  type Payment,
  type PaymentAttempt,
  type PaymentAttemptEventData,
  type PaymentCompletedEventData,
  type PaymentConcept,
  type PaymentMethod,
  type PaymentMethodEventData,
  type PaymentSession,
  type Refund,
  type RefundEventData,
  type RelatedInvoice,
  type Subscription,
  type SubscriptionEventData,
  type SubscriptionItem,
  type UnknownEvent,
  type WebhookEvent,
} from './events/index.js';

// The receiver and its adapters, for apps that compose by hand instead of calling createPayhooks
export {
  createReceiver,
  type DeliveryObservation,
  type Receiver,
  type ReceiveRequest,
  type ReceiveResponse,
  type ReceiverOptions,
} from './receiver/receiver.js';
export { expressMiddleware } from './adapters/express.js';
export { fetchHandler } from './adapters/fetch.js';
export { nodeHandler } from './adapters/node-http.js';

// The inbox: opening, migrating, reading and maintaining it
export { openDatabase, type DatabaseOptions, type PayhooksDatabase } from './store/database.js';
export {
  migrate,
  migrateApp,
  readMigrations,
  MigrationChecksumError,
  UnknownMigrationsError,
  DEFAULT_APP_SCHEMA,
  type AppMigrationOptions,
  type MigrationFile,
  type MigrationReport,
} from './store/migrate.js';
export { getEvent, listEvents, type ListEventsFilter, type StoredEvent, type StoredEventDetail } from './store/inbox.js';
export { pruneEvents, replayEvents } from './store/maintenance.js';
export {
  countNeedsReview,
  listSteps,
  resolveStep,
  type EffectStep,
  type NeedsReviewCount,
  type ResolveOutcome,
  type StepResolution,
} from './store/effect-steps.js';
export { GROUP_COMMIT_DEFAULTS, type GroupCommitOptions, UnstorableEventError } from './store/group-commit.js';
export { EVENT_STATUSES, type EventStatus, type PayhooksTables } from './store/schema.js';

// Handlers and the worker that runs them (hooks.on / hooks.start)
export type { AnyEventHandler, EventHandler, HandlerContext, HandlerOptions, UnknownTypeHandlerOptions } from './worker/handlers.js';
export { UnknownEventTypeError } from './worker/unknown-event-type.js';
export {
  EFFECT_RESULT_MAX_CHARS,
  EffectNeedsReviewError,
  effectKey,
  type EffectOptions,
  type EffectRunner,
  type EffectStepContext,
} from './worker/effects.js';
export { WORKER_DEFAULTS } from './worker/defaults.js';
export type { HandlerRunObservation, Worker } from './worker/worker.js';
export { WorkerEvents, type WorkerEventListener, type WorkerEventMap, type WorkerEventName } from './worker/worker-events.js';
export type { BackoffOptions } from './worker/retry-delay.js';
export { createPayhooksMetrics, type PayhooksMetrics } from './metrics/payhooks-metrics.js';
export type { AdminApi, AdminHandlers, AdminRequest } from './console/admin-api.js';
export { DeadLetterError, RetryLaterError } from './worker/handler-errors.js';

// The sync service's building blocks: the Postgres mirror, connectors, HTTP forward and broker sinks, the configuration
// file. Their home is `payhooks/sync` (src/sync/index.ts), which also holds backfill and reconciliation; they stay
// here, as the same objects, so that imports from 'payhooks' written before that entry keep working. None of them
// loads a broker client until a RabbitMQ or NATS publisher opens.
export { MIRROR_DEFAULTS, registerMirror, type MirrorOptions } from './sync/mirror/mirror-sink.js';
export { MIRROR_TABLES, type MirrorTable } from './sync/mirror/states.js';
export { migrateMirror } from './store/migrate.js';
export { type BrokerConfig, ConfigError, loadSyncConfig, type SyncConfig } from './sync/config.js';
export {
  type Connector,
  type ConnectorContext,
  type ConnectorDefinition,
  defineConnector,
  idempotencyKey,
  registerConnector,
  type RegisterConnectorOptions,
} from './sync/connector.js';
export {
  createHttpHelper,
  HTTP_DEFAULT_TIMEOUT_MS,
  HttpConnectionError,
  type HttpHelper,
  type HttpRequest,
  type HttpResponse,
  HttpStatusError,
} from './sync/http-helper.js';
export { FORWARD_DEFAULTS, type ForwardOptions, type ForwardTarget, registerHttpForward } from './sync/http-forward.js';
export { FORWARD_DOCUMENT_VERSION, type ForwardDocument } from './sync/forward-document.js';
export { readResourceState, type ResourceKind, type ResourceState, type StateSource } from './sync/resource-state.js';
export { type BrokerMessage, type BrokerPublisher, type BrokerSinkOptions, registerBrokerSink } from './sync/brokers/broker-sink.js';
export { RABBITMQ_DEFAULTS, rabbitMqPublisher, type RabbitMqOptions } from './sync/brokers/rabbitmq.js';
export { NATS_DEFAULTS, natsPublisher, type NatsOptions } from './sync/brokers/nats.js';
export { registerSinks, type RegisteredSinks } from './sync/sinks.js';
