// Type-level tests of the public entries: the types users name are exported from the entry they use, and the
// pieces fit together as documented. Checked by `npm run typecheck` (tsc), not run.
import { expectTypeOf } from 'vitest';
import type {
  ApiClient,
  ApiCustomer,
  ApiInvoice,
  ClientOptions,
  CreateCustomerInput,
  CreateInvoiceInput,
  Invoices,
  ListPage,
  PageQuery,
  RateLimiter,
  RequestOptions,
  WebhookEventRecord,
} from '../../src/client/index.js';
import type {
  AnyEventHandler,
  EventHandler,
  EventMap,
  EventStatus,
  EventType,
  HandlerContext,
  HandlerOptions,
  Invoice,
  Payhooks,
  PayhooksDatabase,
  PayhooksOptions,
  PayhooksWorkerOptions,
  ReceiveRequest,
  RegisterHandlers,
  SignatureScheme,
  StoredEvent,
  UnknownEvent,
  WebhookEvent,
  Worker,
} from '../../src/index.js';
import type { Simulator, SimulatorOptions, TriggerOptions, TriggerResult } from '../../src/simulator/index.js';
import type {
  BackfillApi,
  BackfillOptions,
  BackfillReport,
  Connector,
  ReconcileOptions,
  ReconcileReport,
  RegisteredSinks,
  SyncConfig,
} from '../../src/sync/index.js';
import type * as rootEntry from '../../src/index.js';
import type * as syncEntry from '../../src/sync/index.js';
import { signedRequest, type SignedRequest, type SignedRequestOptions } from '../../src/testing/index.js';

// RegisterHandlers (moved out of cli/) is the handlers-module contract: the instance with the API client.
expectTypeOf<Parameters<RegisterHandlers>[0]>().toEqualTypeOf<Payhooks<ApiClient>>();
expectTypeOf<PayhooksOptions<ApiClient>['api']>().toEqualTypeOf<ApiClient | undefined>();
expectTypeOf<Payhooks['start']>().returns.resolves.toEqualTypeOf<Worker>();
expectTypeOf<Payhooks['ready']>().returns.resolves.toEqualTypeOf<PayhooksDatabase>();
expectTypeOf<NonNullable<PayhooksWorkerOptions['concurrency']>>().toEqualTypeOf<number>();
expectTypeOf<EventHandler<'INVOICE_PAID'>>().parameter(0).toEqualTypeOf<WebhookEvent<'INVOICE_PAID'>>();
expectTypeOf<EventHandler<'INVOICE_PAID', ApiClient>>().parameter(1).toEqualTypeOf<HandlerContext<ApiClient>>();
expectTypeOf<AnyEventHandler>().parameter(0).toEqualTypeOf<WebhookEvent | UnknownEvent>();
expectTypeOf<HandlerOptions>().toBeObject();
expectTypeOf<StoredEvent['status']>().toEqualTypeOf<EventStatus>();
expectTypeOf<EventMap['INVOICE_PAID']['invoice']>().toMatchTypeOf<Invoice>();
expectTypeOf<EventType>().toMatchTypeOf<string>();

// The client entry carries the REST contract's types: what each method takes and returns.
expectTypeOf<Invoices['create']>().parameter(0).toEqualTypeOf<CreateInvoiceInput>();
expectTypeOf<Invoices['create']>().returns.resolves.toEqualTypeOf<ApiInvoice>();
expectTypeOf<ApiClient['customers']['create']>().parameter(0).toEqualTypeOf<CreateCustomerInput>();
expectTypeOf<ApiClient['customers']['list']>().parameters.toEqualTypeOf<[PageQuery?, RequestOptions?]>();
expectTypeOf<ApiClient['customers']['list']>().returns.resolves.toEqualTypeOf<ListPage<ApiCustomer>>();
expectTypeOf<ApiClient['webhookEvents']['list']>().returns.resolves.toEqualTypeOf<ListPage<WebhookEventRecord>>();
expectTypeOf<RateLimiter>().toMatchTypeOf<NonNullable<ClientOptions['rateLimit']>>();

// The simulator entry's option and result types.
expectTypeOf<SimulatorOptions['timeScale']>().toEqualTypeOf<number | undefined>();
expectTypeOf<Simulator['url']>().toEqualTypeOf<string>();
expectTypeOf<TriggerOptions>().toBeObject();
expectTypeOf<TriggerResult>().toBeObject();

// payhooks/sync: the sync service's parts fit the library's instance, store and client; the names it shares with
// the root entry are the same types there.
expectTypeOf<syncEntry.Connector>().toEqualTypeOf<rootEntry.Connector>();
expectTypeOf<syncEntry.SyncConfig>().toEqualTypeOf<rootEntry.SyncConfig>();
expectTypeOf<typeof syncEntry.registerSinks>().parameter(0).toEqualTypeOf<Payhooks<ApiClient>>();
expectTypeOf<typeof syncEntry.registerSinks>().returns.resolves.toEqualTypeOf<RegisteredSinks>();
expectTypeOf<SyncConfig['connectors']>().toEqualTypeOf<Connector[]>();
expectTypeOf<BackfillOptions['store']>().toEqualTypeOf<PayhooksDatabase>();
expectTypeOf<ApiClient>().toMatchTypeOf<BackfillApi>();
expectTypeOf<typeof syncEntry.runBackfill>().returns.resolves.toEqualTypeOf<BackfillReport>();
expectTypeOf<ReconcileOptions['store']>().toEqualTypeOf<PayhooksDatabase>();
expectTypeOf<ApiClient>().toMatchTypeOf<ReconcileOptions['api']>();
expectTypeOf<typeof syncEntry.reconcile>().returns.resolves.toEqualTypeOf<ReconcileReport>();

// payhooks/testing: one signed request fits both hooks.receive() and fetch().
expectTypeOf(signedRequest).returns.toEqualTypeOf<SignedRequest>();
expectTypeOf<SignedRequest>().toMatchTypeOf<ReceiveRequest>();
expectTypeOf<SignedRequest>().toMatchTypeOf<RequestInit>();
expectTypeOf<SignedRequestOptions['scheme']>().toEqualTypeOf<SignatureScheme | undefined>();
// @ts-expect-error an event is an object or the raw JSON text
signedRequest(42, { secret: 's' });
