import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exampleEvent, isEventType, type EventMap, type EventType, type WebhookEvent } from '../events/index.js';
import { clockControl, SimulatorClock, type SimulatorClockControl } from './clock.js';
import { clockRoutes } from './clock-routes.js';
import { scheduleCollection } from './collections.js';
import type { EmittedEvent, SimulatorContext } from './context.js';
import { customerRoutes } from './customer-routes.js';
import { DeliveryQueue, type DeliveryPost, type DeliveryRecordFilter, type DeliveryRecord } from './deliveries.js';
import { disputeRoutes } from './dispute-routes.js';
import { paymentMethodRoutes } from './payment-method-routes.js';
import { documentRoutes } from './document-routes.js';
import { newId } from './ids.js';
import { invoiceRoutes } from './invoice-routes.js';
import { resolveSimulatorOptions, type ResolvedSimulatorOptions, type SimulatorOptions } from './options.js';
import { paymentRoutes } from './payment-routes.js';
import { portalRoutes } from './portal-routes.js';
import { refundRoutes } from './refund-routes.js';
import { createRestHandler } from './rest-handler.js';
import type { Route } from './route.js';
import { sandboxChangeRoutes } from './sandbox-change-routes.js';
import { sandboxEventRoutes } from './sandbox-event-routes.js';
import { SimulatorState, type SimulatorRecords } from './state.js';
import { restoreState, snapshotState, type SimulatorSnapshot } from './state-file.js';
import { subscriptionRoutes } from './subscription-routes.js';
import { webhookRoutes } from './webhook-routes.js';

/** A running simulator. */
export interface Simulator {
  /** Its base URL, e.g. `http://127.0.0.1:4010` (no trailing slash). */
  readonly url: string;
  readonly port: number;
  /** The options in effect, defaults applied. */
  readonly options: Readonly<Omit<ResolvedSimulatorOptions, 'random' | 'logger'>>;
  /** Every operation it serves (what `/openapi.json` describes). */
  readonly routes: readonly Route[];
  /** Its time: real, or manual and moved by `clock.advance('1d')` (the `clock` option). */
  readonly clock: SimulatorClockControl;
  /** A copy of its state, to start another simulator from (`restore`) or to write to a file. */
  snapshot(): SimulatorSnapshot;
  /**
   * Sends a realistic event of any type (the catalog's example, with a fresh eventId and `data` fields
   * overridden) to every endpoint subscribed to it, as if the service had emitted it. Returns at once; the
   * deliveries go on in the background with the same retries and chaos as any other.
   *
   * @example
   * const event = simulator.emit('PAYMENT_REFUNDED');
   * await simulator.idle();
   */
  emit<K extends EventType>(eventType: K, data?: Partial<EventMap[K]>): WebhookEvent<K>;
  /** Every event emitted so far (by REST actions and by {@link Simulator.emit}), oldest first. */
  events(): readonly EmittedEvent[];
  /**
   * A copy of every customer, invoice, payment, refund, dispute and subscription it holds, oldest first: the
   * current state a mirror of this organization should equal.
   */
  records(): SimulatorRecords;
  /** The delivery history: one record per (event, endpoint), as `GET /v1/webhook-events` lists it. */
  webhookEvents(filter?: DeliveryRecordFilter): DeliveryRecord[];
  /** Every POST made to an endpoint, chaos duplicates included, in the order they were answered. */
  deliveryPosts(): readonly DeliveryPost[];
  /** Resolves when no delivery is buffered, queued or in flight (scheduled retries may still be waiting). */
  idle(): Promise<void>;
  /** Stops the server, every retry timer and every delivery in flight; nothing is sent afterwards. */
  close(): Promise<void>;
}

/**
 * Starts an in-memory emulation of the Payment Collection Service: the REST interface of the spec (with its
 * keys, `{input}` bodies, uniqueness, paging, idempotency and rate limit), the state rules that emit events,
 * simulator-only sandbox calls under `/v1/sandbox/` that cause the rest (refunds, disputes, subscriptions, failed
 * attempts), and real signed webhook deliveries with the spec's retry schedule. Everything is lost on close.
 *
 * @example
 * const simulator = await startSimulator({ timeScale: 100 });
 * await fetch(`${simulator.url}/v1/webhooks`, {
 *   method: 'POST',
 *   headers: { authorization: 'Bearer sk_test_local', 'content-type': 'application/json' },
 *   body: JSON.stringify({ input: { url: 'http://127.0.0.1:8787/webhooks', description: 'local', enabledEvents: ['INVOICE_PAID'] } }),
 * });
 * // …
 * await simulator.close();
 */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const resolved = resolveSimulatorOptions(options);
  const state = new SimulatorState();
  const emitted: EmittedEvent[] = [];
  const restore = options.restore;
  if (restore) restoreState(state, emitted, restore);
  const clock = new SimulatorClock({
    mode: resolved.clock,
    timeScale: resolved.timeScale,
    startAt: resolved.startAt ?? (restore?.clock.mode === 'manual' ? Date.parse(restore.clock.now) : undefined),
    settle: () => deliveries.idle(),
  });
  const deliveries = new DeliveryQueue({
    clock,
    timeScale: resolved.timeScale,
    duplicateRate: resolved.duplicateRate,
    reorder: resolved.reorder,
    deliveryTimeoutMs: resolved.deliveryTimeoutMs,
    concurrency: resolved.deliveryConcurrency,
    random: resolved.random,
    logger: resolved.logger,
    endpoint: (id) => state.endpoints.get(id),
  });

  const ctx: SimulatorContext = {
    state,
    deliveries,
    options: resolved,
    clock,
    emit(eventType, data) {
      const event: EmittedEvent = { eventId: newId('evt'), eventType, data };
      emitted.push(event);
      const subscribed = [...state.endpoints.values()].filter((endpoint) => endpoint.enabledEvents.includes(eventType));
      deliveries.enqueue(event, subscribed);
      return event;
    },
    events: () => emitted,
  };

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
  for (const subscription of state.subscriptions.values()) scheduleCollection(ctx, subscription);
  routes.push(...documentRoutes(() => routes));

  let url = '';
  const server = createServer(createRestHandler({ routes, options: resolved, baseUrl: () => url }));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(resolved.port, resolved.host, () => {
      server.off('error', reject);
      resolve();
    });
  }).catch(async (err: unknown) => {
    await deliveries.close();
    throw err;
  });
  const { port } = server.address() as AddressInfo;
  url = `http://${resolved.host.includes(':') ? `[${resolved.host}]` : resolved.host}:${port}`;
  resolved.logger?.info({ url }, 'simulator listening');

  let closing: Promise<void> | undefined;
  const { random: _random, logger: _logger, ...publicOptions } = resolved;
  return {
    url,
    port,
    options: publicOptions,
    routes,
    clock: clockControl(clock),
    snapshot: () => snapshotState(state, emitted, { mode: clock.mode, now: clock.now() }),
    emit(eventType, data) {
      if (!isEventType(eventType)) throw new TypeError(`Unknown event type ${JSON.stringify(eventType)}.`);
      const example = exampleEvent(eventType, data === undefined ? {} : { data });
      return { ...example, eventId: ctx.emit(eventType, example.data).eventId } as typeof example;
    },
    events: () => emitted,
    records: () => state.records(),
    webhookEvents: (filter) => deliveries.list(filter),
    deliveryPosts: () => deliveries.posts(),
    idle: () => deliveries.idle(),
    close() {
      closing ??= (async () => {
        clock.close();
        await deliveries.close();
        await new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        });
        resolved.logger?.info('simulator stopped');
      })();
      return closing;
    },
  };
}
