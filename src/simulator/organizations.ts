import { randomBytes } from 'node:crypto';
import { exampleEvent, isEventType, type EventMap, type EventType, type WebhookEvent } from '../events/index.js';
import type { SimulatorClock } from './clock.js';
import { clockRoutes } from './clock-routes.js';
import { scheduleCollection } from './collections.js';
import type { EmittedEvent, SimulatorContext } from './context.js';
import { customerRoutes } from './customer-routes.js';
import type { DeliveryQueue, DeliveryRecord, DeliveryRecordFilter } from './deliveries.js';
import { disputeRoutes } from './dispute-routes.js';
import { documentRoutes } from './document-routes.js';
import { IdempotencyStore } from './idempotency.js';
import { newId } from './ids.js';
import { invoiceRoutes } from './invoice-routes.js';
import { type ResolvedSimulatorOptions, SimulatorOptionError } from './options.js';
import { paymentMethodRoutes } from './payment-method-routes.js';
import { paymentRoutes } from './payment-routes.js';
import { portalRoutes } from './portal-routes.js';
import { refundRoutes } from './refund-routes.js';
import type { KeyEnvironment, Route } from './route.js';
import { sandboxChangeRoutes } from './sandbox-change-routes.js';
import { sandboxEventRoutes } from './sandbox-event-routes.js';
import { SimulatorState, type SimWebhookEndpoint, type SimulatorRecords } from './state.js';
import { restoreState, type SimulatorSnapshot } from './state-file.js';
import { subscriptionRoutes } from './subscription-routes.js';
import { webhookRoutes } from './webhook-routes.js';

// One simulator runs one or more organizations of the service. Each has its own state (customers, invoices, …,
// webhook endpoints and their secrets), its own routes bound to that state, its own idempotency keys and its own
// API key: a call is served by the organization its key belongs to, so another's id is simply not there (404),
// as the service answers. The delivery queue is shared (one concurrency limit, one set of sockets); each
// organization emits only to its own endpoints.

/** The staging key of the one organization of a single-organization simulator (which accepts any sk_test_ key). */
export const SINGLE_ORGANIZATION_KEY = 'sk_test_local';

/** One organization of a running simulator. */
export interface SimulatorOrganization {
  /** Its account id: `default` alone, else `acct_1`… or the ids given. */
  readonly id: string;
  /** Its name (a payment's beneficiary). */
  readonly name: string;
  /**
   * Its staging key. Its production key is the same with `sk_live_` in place of `sk_test_`. A single
   * organization accepts any `sk_test_`/`sk_live_` key; this one is `sk_test_local`.
   */
  readonly apiKey: string;
  /** Like {@link Simulator.emit}, to this organization's endpoints. */
  emit<K extends EventType>(eventType: K, data?: Partial<EventMap[K]>): WebhookEvent<K>;
  /** The events it emitted, oldest first. */
  events(): readonly EmittedEvent[];
  /** A copy of its records: what a mirror of this organization should equal. */
  records(): SimulatorRecords;
  /** The delivery history of its endpoints. */
  webhookEvents(filter?: DeliveryRecordFilter): DeliveryRecord[];
  /** Whether the resource, endpoint, event or delivery record with this id is this organization's. */
  holds(id: string): boolean;
}

/** An organization with what the request pipeline needs to serve it. */
export interface OrganizationRuntime {
  readonly organization: SimulatorOrganization;
  readonly state: SimulatorState;
  /** Its routes, in the order of every other organization's (the router matches on the first's and runs the same index here). */
  readonly routes: readonly Route[];
  readonly idempotency: IdempotencyStore;
}

/** Every route of the service, bound to one organization's context. */
export function organizationRoutes(ctx: SimulatorContext): Route[] {
  const routes: Route[] = [
    ...customerRoutes(ctx),
    ...invoiceRoutes(ctx),
    ...paymentRoutes(ctx),
    ...webhookRoutes(ctx),
    ...portalRoutes(ctx),
    // Simulator-only sandbox calls (assumed, not in the spec): they cause the events no spec'd call causes.
    ...refundRoutes(ctx),
    ...disputeRoutes(ctx),
    ...paymentMethodRoutes(ctx),
    ...subscriptionRoutes(ctx),
    ...sandboxEventRoutes(ctx),
    ...sandboxChangeRoutes(ctx),
    ...clockRoutes(ctx),
  ];
  routes.push(...documentRoutes(() => routes));
  return routes;
}

/** What {@link Organizations} needs from the simulator. */
export interface OrganizationsOptions {
  options: ResolvedSimulatorOptions;
  deliveries: DeliveryQueue;
  /** The simulator's one clock, shared by every organization. */
  clock: SimulatorClock;
  /** A snapshot to start the (one) organization from. */
  restore?: SimulatorSnapshot | undefined;
  /** Called with every event any organization emits, restored ones included (the simulator's own list of all events). */
  onEmit: (event: EmittedEvent) => void;
}

/** The organizations of one simulator: built from `options.accounts`, found by key, by id, or by what they hold. */
export class Organizations {
  readonly #list: OrganizationRuntime[];
  readonly #byKeyTail = new Map<string, OrganizationRuntime>();

  constructor({ options, deliveries, clock, restore, onEmit }: OrganizationsOptions) {
    const single = options.accounts.length === 1;
    if (restore && !single) {
      throw new SimulatorOptionError(`restore takes a snapshot of one organization; accounts gives ${options.accounts.length}.`);
    }
    this.#list = options.accounts.map((id) => {
      // The key names its account, so that a developer reading a log line knows whose it is; the random tail makes it a key.
      const apiKey = single ? SINGLE_ORGANIZATION_KEY : `sk_test_${id}_${randomBytes(12).toString('base64url')}`;
      const runtime = createOrganization({ id, apiKey, single, options, deliveries, clock, restore, onEmit });
      this.#byKeyTail.set(keyTail(apiKey), runtime);
      return runtime;
    });
  }

  /** Every organization, in the order of `options.accounts`. */
  get all(): readonly OrganizationRuntime[] {
    return this.#list;
  }

  /** The first organization: the default of `emit`, `records` and `trigger`. */
  get first(): OrganizationRuntime {
    return this.#list[0]!;
  }

  /** The organization with this account id, or undefined. */
  get(id: string): OrganizationRuntime | undefined {
    return this.#list.find((runtime) => runtime.organization.id === id);
  }

  /**
   * The organization a bearer key (`sk_test_…` or `sk_live_…`, already checked for that shape) belongs to, or
   * undefined for a key no organization has. A single organization takes any key, as the simulator always did.
   */
  byKey(key: string): OrganizationRuntime | undefined {
    if (this.#list.length === 1) return this.first;
    return this.#byKeyTail.get(keyTail(key));
  }

  /** The webhook endpoint with this id, whichever organization holds it (ids are random, so never shared). */
  endpoint(id: string): SimWebhookEndpoint | undefined {
    for (const runtime of this.#list) {
      const endpoint = runtime.state.endpoints.get(id);
      if (endpoint) return endpoint;
    }
    return undefined;
  }

  /** The account id of the organization that holds this id, or undefined when none does. */
  ownerOf(id: string): string | undefined {
    return this.#list.find((runtime) => runtime.organization.holds(id))?.organization.id;
  }
}

/** `sk_test_X` and `sk_live_X` are the staging and production keys of one organization: both end in `X`. */
function keyTail(key: string): string {
  return key.replace(/^sk_(test|live)_/i, '');
}

/** The environment a key is for. */
export function keyEnvironment(key: string): KeyEnvironment {
  return /^sk_live_/i.test(key) ? 'production' : 'staging';
}

function createOrganization(input: {
  id: string;
  apiKey: string;
  single: boolean;
  options: ResolvedSimulatorOptions;
  deliveries: DeliveryQueue;
  clock: SimulatorClock;
  restore: SimulatorSnapshot | undefined;
  onEmit: (event: EmittedEvent) => void;
}): OrganizationRuntime {
  const { id, apiKey, options, deliveries, clock, restore, onEmit } = input;
  const state = new SimulatorState(input.single ? undefined : `Simulated Organization ${id}`);
  const emitted: EmittedEvent[] = [];
  if (restore) restoreState(state, emitted, restore);
  const emittedIds = new Set(emitted.map((event) => event.eventId));
  for (const event of emitted) onEmit(event);
  const ctx: SimulatorContext = {
    state,
    deliveries,
    options,
    clock,
    emit(eventType, data) {
      const event: EmittedEvent = { eventId: newId('evt'), eventType, data };
      emitted.push(event);
      emittedIds.add(event.eventId);
      onEmit(event);
      const subscribed = [...state.endpoints.values()].filter((endpoint) => endpoint.enabledEvents.includes(eventType));
      deliveries.enqueue(event, subscribed);
      return event;
    },
    events: () => emitted,
  };
  const ownRecord = (recordId: string) => {
    const record = deliveries.get(recordId);
    return record !== undefined && state.endpoints.has(record.endpointId);
  };
  const organization: SimulatorOrganization = {
    id,
    name: state.organization.name,
    apiKey,
    emit(eventType, data) {
      if (!isEventType(eventType)) throw new TypeError(`Unknown event type ${JSON.stringify(eventType)}.`);
      const example = exampleEvent(eventType, data === undefined ? {} : { data });
      return { ...example, eventId: ctx.emit(eventType, example.data).eventId } as typeof example;
    },
    events: () => emitted,
    records: () => state.records(),
    webhookEvents: (filter) => deliveries.list(filter).filter((record) => state.endpoints.has(record.endpointId)),
    holds: (resourceId) => state.holds(resourceId) || emittedIds.has(resourceId) || ownRecord(resourceId),
  };
  const routes = organizationRoutes(ctx);
  // A restored subscription collects on its schedule again.
  for (const subscription of state.subscriptions.values()) scheduleCollection(ctx, subscription);
  return { organization, state, routes, idempotency: new IdempotencyStore() };
}
