import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { EventMap, EventType, WebhookEvent } from '../events/index.js';
import { clockControl, SimulatorClock, type SimulatorClockControl } from './clock.js';
import type { EmittedEvent } from './context.js';
import { DeliveryQueue, type DeliveryPost, type DeliveryRecordFilter, type DeliveryRecord } from './deliveries.js';
import { resolveSimulatorOptions, type ResolvedSimulatorOptions, type SimulatorOptions } from './options.js';
import { Organizations, type SimulatorOrganization } from './organizations.js';
import { RequestLog, type RequestLogEntry } from './request-log.js';
import { createRestHandler } from './rest-handler.js';
import type { Route } from './route.js';
import type { SimulatorRecords } from './state.js';
import { snapshotState, type SimulatorSnapshot } from './state-file.js';

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
  /** Every event emitted so far (by REST actions and by {@link Simulator.emit}), of every organization, oldest first. */
  events(): readonly EmittedEvent[];
  /**
   * A copy of every customer, invoice, payment, refund, dispute and subscription the first organization holds,
   * oldest first: the current state a mirror of it should equal (another's: `organization(id).records()`).
   */
  records(): SimulatorRecords;
  /** Its organizations, in the order of `options.accounts` (one, `default`, unless `accounts` said otherwise). */
  organizations(): readonly SimulatorOrganization[];
  /** The organization with this account id; throws a RangeError naming the ids there are. */
  organization(id: string): SimulatorOrganization;
  /** The account id of the organization that holds this resource, endpoint, event or delivery id; undefined if none. */
  ownerOf(id: string): string | undefined;
  /**
   * Every REST call answered to a known key (the last 100 000): which key, whose it is, and which resource ids it
   * named or was answered (see {@link RequestLogEntry}); so a test can prove no key touched another organization's data.
   */
  requestLog(): RequestLogEntry[];
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
 * const simulator = await startSimulator({ timeScale: 100 }); // { accounts: 3 }: three organizations, each its own key
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
  const emitted: EmittedEvent[] = [];
  const restore = options.restore;
  const clock = new SimulatorClock({
    mode: resolved.clock,
    timeScale: resolved.timeScale,
    startAt: resolved.startAt ?? (restore?.clock.mode === 'manual' ? Date.parse(restore.clock.now) : undefined),
    settle: () => deliveries.idle(),
  });
  // The organizations are made after the queue, which asks them for an endpoint only when it sends.
  let organizations: Organizations | undefined;
  const deliveries = new DeliveryQueue({
    clock,
    timeScale: resolved.timeScale,
    duplicateRate: resolved.duplicateRate,
    reorder: resolved.reorder,
    deliveryTimeoutMs: resolved.deliveryTimeoutMs,
    concurrency: resolved.deliveryConcurrency,
    random: resolved.random,
    logger: resolved.logger,
    endpoint: (id) => organizations?.endpoint(id),
  });
  const orgs = new Organizations({ options: resolved, deliveries, clock, restore, onEmit: (event) => emitted.push(event) });
  organizations = orgs;
  const requestLog = new RequestLog();

  let url = '';
  const server = createServer(createRestHandler({ organizations: orgs, requestLog, options: resolved, baseUrl: () => url }));
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
  resolved.logger?.info({ url, accounts: resolved.accounts.length }, 'simulator listening');

  let closing: Promise<void> | undefined;
  const { random: _random, logger: _logger, ...publicOptions } = resolved;
  return {
    url,
    port,
    options: publicOptions,
    routes: orgs.first.routes,
    clock: clockControl(clock),
    snapshot() {
      // A snapshot file holds one organization's state (src/simulator/state-file.ts).
      if (orgs.all.length > 1) throw new RangeError(`A snapshot holds one organization; this simulator runs ${orgs.all.length}.`);
      return snapshotState(orgs.first.state, emitted, { mode: clock.mode, now: clock.now() });
    },
    emit: (eventType, data) => orgs.first.organization.emit(eventType, data),
    events: () => emitted,
    records: () => orgs.first.organization.records(),
    organizations: () => orgs.all.map((runtime) => runtime.organization),
    organization(id) {
      const found = orgs.get(id);
      if (!found) {
        throw new RangeError(`No organization ${JSON.stringify(id)}: this simulator has ${resolved.accounts.join(', ')}.`);
      }
      return found.organization;
    },
    ownerOf: (id) => orgs.ownerOf(id),
    requestLog: () => requestLog.entries(),
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
