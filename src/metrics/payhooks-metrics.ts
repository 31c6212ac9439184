import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { ApiRequestObservation } from '../client/http-transport.js';
import type { PayhooksObserver } from '../payhooks.js';
import type { PayhooksDatabase } from '../store/database.js';
import { countEventsByStatus, type OldestPending, oldestPendingEvent } from '../store/inbox.js';
import { countQuarantined } from '../store/quarantine.js';
import { countNeedsReview } from '../store/effect-steps.js';
import { EVENT_STATUSES } from '../store/schema.js';
import { DEFAULT_ACCOUNT } from '../store/accounts.js';

/** The series payhooks exposes, and the callbacks that move them. */
export interface PayhooksMetrics {
  /** For `createPayhooks({ observe })`: deliveries and handler runs. */
  observe: PayhooksObserver;
  /** For `createClient({ onRequest })`: the API client's requests. */
  apiRequest(request: ApiRequestObservation): void;
  /** Time spent waiting for the API's rate budget before a request. */
  rateLimitWait(seconds: number): void;
  /**
   * The `account` label value these series give an account: its id for the first `accountLabels` accounts seen,
   * `other` after. Other series labelled by account (the gap sweeper's, health-metrics.ts) take the same one, so that an
   * account is named alike everywhere.
   */
  accountLabel(account: string): string;
}

// Acknowledgements must come within the sender's 10 s; the buckets resolve the fast path and the edge of the budget.
const ACK_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 8, 10];
const RUN_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * Registers payhooks' series on a prom-client registry (docs/metrics.md) and returns the callbacks that move
 * them. With `store`, the events by state and the age of the oldest pending event are read from the inbox at
 * each scrape.
 *
 * @example
 * const registry = new Registry();
 * const metrics = createPayhooksMetrics(registry, { store: () => hooks.ready() });
 * const hooks = createPayhooks({ secret, observe: metrics.observe });
 */
export function createPayhooksMetrics(
  registry: Registry,
  options: {
    store?: () => Promise<PayhooksDatabase>;
    /**
     * How many accounts get a label value of their own (docs/metrics.md#accounts); those seen after are counted as
     * `other`, so that the number of series stays bounded. Default {@link DEFAULT_ACCOUNT_LABELS}.
     */
    accountLabels?: number | undefined;
  } = {},
): PayhooksMetrics {
  const registers = [registry];
  const accountLabel = boundedLabels(options.accountLabels ?? DEFAULT_ACCOUNT_LABELS);
  const deliveries = new Counter({
    name: 'payhooks_deliveries_total',
    help: 'Webhook deliveries answered by the receiver, by event type (unknown before the signature is checked), outcome and account (unknown: a route of no configured account).',
    labelNames: ['type', 'outcome', 'account'],
    registers,
  });
  const lastStored = new Gauge({
    name: 'payhooks_account_last_stored_timestamp_seconds',
    help: 'When this process last stored a new event of each account (unix seconds): an account that stays silent while others are not has a silent sender (docs/alerts.md).',
    labelNames: ['account'],
    registers,
  });
  const duplicates = new Counter({
    name: 'payhooks_duplicate_deliveries_total',
    help: 'Deliveries of an event already stored, by event type.',
    labelNames: ['type'],
    registers,
  });
  const signatureFailures = new Counter({
    name: 'payhooks_signature_failures_total',
    help: 'Deliveries refused for their signature, by reason.',
    labelNames: ['reason'],
    registers,
  });
  const ack = new Histogram({
    name: 'payhooks_ack_seconds',
    help: 'Time from a delivery reaching the receiver to its answer, by outcome.',
    labelNames: ['outcome'],
    buckets: ACK_BUCKETS,
    registers,
  });
  const handlerDuration = new Histogram({
    name: 'payhooks_handler_duration_seconds',
    help: 'Handler and sink runs, by name (sinks: mirror, forward:<name>, broker:<name>, connector:<name>).',
    labelNames: ['handler'],
    buckets: RUN_BUCKETS,
    registers,
  });
  const handlerFailures = new Counter({
    name: 'payhooks_handler_failures_total',
    help: 'Handler and sink runs that failed, by name and account.',
    labelNames: ['handler', 'account'],
    registers,
  });
  // Without labels, so that it is 0 from the first scrape: increase() sees nothing of a series' first sample, and would
  // miss the first dead event of each label.
  const deadEvents = new Counter({
    name: 'payhooks_events_dead_total',
    help: "Events this process's worker recorded dead (a handler gave up, or the last attempt failed); a replay takes nothing back.",
    registers,
  });
  const apiRequests = new Counter({
    name: 'payhooks_api_requests_total',
    help: "Requests of the service's API client, by method and status (none: no answer).",
    labelNames: ['method', 'status'],
    registers,
  });
  const apiDuration = new Histogram({
    name: 'payhooks_api_request_duration_seconds',
    help: "Requests of the service's API client, by method.",
    labelNames: ['method'],
    buckets: RUN_BUCKETS,
    registers,
  });
  const rateLimitWaits = new Histogram({
    name: 'payhooks_api_rate_limit_wait_seconds',
    help: "Time waited for the API's rate budget before a request.",
    buckets: [0.001, 0.01, 0.1, 1, 5, 15, 30, 60],
    registers,
  });

  if (options.store) registerInboxGauges(registers, options.store);

  return {
    observe: {
      delivery(delivery) {
        const type = delivery.eventType ?? 'unknown';
        // An unknown account's id comes from the request's path: never a label value of its own.
        const account = delivery.account === null ? 'unknown' : accountLabel(delivery.account);
        deliveries.inc({ type, outcome: delivery.outcome, account });
        if (delivery.outcome === 'stored') lastStored.set({ account }, Date.now() / 1000);
        if (delivery.outcome === 'duplicate') duplicates.inc({ type });
        if (delivery.outcome === 'rejected') signatureFailures.inc({ reason: delivery.reason ?? 'unknown' });
        ack.observe({ outcome: delivery.outcome }, delivery.seconds);
      },
      handlerRun(run) {
        handlerDuration.observe({ handler: run.handler }, run.seconds);
        if (run.failed) handlerFailures.inc({ handler: run.handler, account: accountLabel(run.account ?? DEFAULT_ACCOUNT) });
      },
      eventDead() {
        deadEvents.inc();
      },
    },
    apiRequest(request) {
      apiRequests.inc({ method: request.method, status: request.status === null ? 'none' : String(request.status) });
      apiDuration.observe({ method: request.method }, request.seconds);
    },
    rateLimitWait(seconds) {
      rateLimitWaits.observe(seconds);
    },
    accountLabel,
  };
}

/** How many accounts get a label value of their own by default: enough for most platforms, few enough for Prometheus. */
export const DEFAULT_ACCOUNT_LABELS = 100;

/**
 * A label value per account for the first `cap` accounts seen, `other` for the rest: the number of series stays
 * bounded however many accounts a service has.
 *
 * @example
 * const label = boundedLabels(1); label('a') // 'a'; label('b') // 'other'; label('a') // 'a'
 */
export function boundedLabels(cap: number): (value: string) => string {
  const named = new Set<string>();
  return (value) => {
    if (named.has(value)) return value;
    if (named.size >= cap) return 'other';
    named.add(value);
    return value;
  };
}

/** The gauges read from the inbox at each scrape: events by state, effect steps held for review, the oldest pending event. */
function registerInboxGauges(registers: Registry[], storeOf: () => Promise<PayhooksDatabase>): void {
  new Gauge({
    name: 'payhooks_events',
    help: 'Stored events, by state; quarantined: signed deliveries held because they could not be stored as events.',
    labelNames: ['status'],
    registers,
    async collect() {
      // A database that does not answer leaves the last values: the scrape still shows everything else.
      const counts = await storeOf()
        .then(async (store) => ({ ...(await countEventsByStatus(store)), quarantined: await countQuarantined(store) }))
        .catch(() => undefined);
      if (counts) for (const status of [...EVENT_STATUSES, 'quarantined'] as const) this.set({ status }, counts[status] ?? 0);
    },
  });
  new Gauge({
    name: 'payhooks_effect_steps_needs_review',
    help: 'Effect steps (ctx.effect) of unknown outcome held for an operator (not idempotent, so not called again on their own): payhooks effects resolve EVENT STEP --done|--redo.',
    registers,
    async collect() {
      const held = await storeOf()
        .then(countNeedsReview)
        .catch(() => undefined);
      if (held) this.set(held.steps);
    },
  });
  // Both gauges below come from one read: a scrape collects them at once, and a read started within the last second
  // is shared rather than made twice. null: the database did not answer (the gauges keep their last value).
  let oldestRead: { at: number; value: Promise<OldestPending | undefined | null> } | undefined;
  const readOldest = () => {
    if (!oldestRead || Date.now() - oldestRead.at > 1000) {
      oldestRead = {
        at: Date.now(),
        value: storeOf()
          .then(oldestPendingEvent)
          .catch(() => null),
      };
    }
    return oldestRead.value;
  };
  new Gauge({
    name: 'payhooks_oldest_pending_age_seconds',
    help: 'Age of the oldest pending event (0 when none is pending): how far behind the worker is.',
    registers,
    async collect() {
      const oldest = await readOldest();
      if (oldest !== null) this.set(oldest ? oldest.ageMs / 1000 : 0);
    },
  });
  new Gauge({
    name: 'payhooks_oldest_pending_resource_queued',
    help: "Queued events of the oldest pending event's resource, it included (1 without a resource, 0 when none is pending): above 1, the backlog waits on one resource, whose events run one at a time.",
    registers,
    async collect() {
      const oldest = await readOldest();
      if (oldest !== null) this.set(oldest ? oldest.queuedForResource : 0);
    },
  });
}
