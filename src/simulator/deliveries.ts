import { setMaxListeners } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import type { ClockTimer, SimulatorClock } from './clock.js';
import { newId } from './ids.js';
import { REORDER_WINDOW_MS, RETRY_DELAYS_MS, type RandomSource } from './options.js';
import { postDelivery } from './post-delivery.js';
import { SIMULATED_TIME_HEADER, signDelivery } from './sign-delivery.js';
import type { SimWebhookEndpoint } from './state.js';

/** One try to deliver a webhook event record (webhookDeliveryAttemptSchema). */
export interface DeliveryAttempt {
  attemptNumber: number;
  attemptedAt: string;
  /** The receiver's status; null when it did not answer (refused, reset, timed out). */
  responseStatus: number | null;
  error: string | null;
  durationMs: number;
}

/** `pending` (more tries to come), `delivered` (a 2xx came back) or `failed` (all 9 tries failed). */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One event sent to one endpoint, with its history (webhookEventRecordSchema). */
export interface DeliveryRecord {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: string;
  url: string;
  status: DeliveryStatus;
  attempts: DeliveryAttempt[];
  createdAt: string;
  nextAttemptAt: string | null;
}

/** Every POST the simulator made, chaos duplicates included (they are not attempts of the record). */
export interface DeliveryPost {
  webhookEventId: string;
  eventId: string;
  eventType: string;
  endpointId: string;
  /** The attempt this POST was; null for a chaos duplicate. */
  attemptNumber: number | null;
  duplicate: boolean;
  sentAt: string;
  responseStatus: number | null;
  error: string | null;
  durationMs: number;
}

/** Filters of {@link DeliveryQueue.list}. */
export interface DeliveryRecordFilter {
  eventId?: string | undefined;
  endpointId?: string | undefined;
  status?: string | undefined;
}

/** What the queue needs from the simulator. */
export interface DeliveryQueueOptions {
  timeScale: number;
  duplicateRate: number;
  reorder: boolean;
  deliveryTimeoutMs: number;
  concurrency: number;
  random: RandomSource;
  logger: Logger | undefined;
  /** The simulator's time: retries wait on it, attempts are dated and signed with it. */
  clock: SimulatorClock;
  /** The endpoint as it is now (its secrets may have rotated since the event was created). */
  endpoint: (id: string) => SimWebhookEndpoint | undefined;
}

interface RecordEntry extends DeliveryRecord {
  body: string;
  /** Scheduled attempts made so far (manual retries do not count towards the 9). */
  scheduledAttempts: number;
}

/** A send waiting for a free slot: a scheduled attempt, a chaos duplicate, or a manual retry. */
type SendKind = 'scheduled' | 'duplicate' | 'manual';

/**
 * The outgoing side of the simulator: one record per (event, endpoint), sent at once, then retried 8 times at
 * the spec's delays divided by the time scale; chaos duplicates and shuffles; at most `concurrency` POSTs in
 * flight. `close()` stops every timer and aborts every POST, so nothing fires afterwards.
 */
export class DeliveryQueue {
  readonly #options: DeliveryQueueOptions;
  readonly #records = new Map<string, RecordEntry>();
  readonly #posts: DeliveryPost[] = [];
  readonly #queue: PQueue;
  readonly #timers = new Set<ClockTimer>();
  readonly #abort = new AbortController();
  readonly #agents: { http: http.Agent; https: https.Agent };
  #reorderBuffer: (() => Promise<void>)[] = [];
  #reorderTimer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: DeliveryQueueOptions) {
    this.#options = options;
    this.#queue = new PQueue({ concurrency: options.concurrency });
    // Every POST in flight listens on the one signal (and removes its listener when done).
    setMaxListeners(0, this.#abort.signal);
    const agentOptions = { keepAlive: true, maxSockets: options.concurrency };
    this.#agents = { http: new http.Agent(agentOptions), https: new https.Agent(agentOptions) };
  }

  /** Creates a record per endpoint and sends the event to each. */
  enqueue(event: { eventId: string; eventType: string; data: unknown }, endpoints: readonly SimWebhookEndpoint[]): DeliveryRecord[] {
    const body = JSON.stringify({ eventId: event.eventId, eventType: event.eventType, data: event.data });
    const created: DeliveryRecord[] = [];
    for (const endpoint of endpoints) {
      const record: RecordEntry = {
        id: newId('whevt'),
        endpointId: endpoint.id,
        eventId: event.eventId,
        eventType: event.eventType,
        url: endpoint.url,
        status: 'pending',
        attempts: [],
        createdAt: this.#options.clock.iso(),
        nextAttemptAt: this.#options.clock.iso(),
        body,
        scheduledAttempts: 0,
      };
      this.#records.set(record.id, record);
      this.#dispatch(record);
      created.push(view(record));
    }
    return created;
  }

  /** The records, oldest first, filtered. */
  list(filter: DeliveryRecordFilter = {}): DeliveryRecord[] {
    const matches: DeliveryRecord[] = [];
    for (const record of this.#records.values()) {
      if (filter.eventId !== undefined && record.eventId !== filter.eventId) continue;
      if (filter.endpointId !== undefined && record.endpointId !== filter.endpointId) continue;
      if (filter.status !== undefined && record.status !== filter.status) continue;
      matches.push(view(record));
    }
    return matches;
  }

  /** One record, or undefined. */
  get(id: string): DeliveryRecord | undefined {
    const record = this.#records.get(id);
    return record && view(record);
  }

  /** Every POST made so far, in the order they were answered. */
  posts(): readonly DeliveryPost[] {
    return this.#posts;
  }

  /**
   * Sends the record once more, now (ahead of queued scheduled sends), and resolves to the record after the
   * attempt. A success marks it delivered and cancels its pending retry; a failure leaves the schedule as it was.
   */
  async retryNow(id: string): Promise<DeliveryRecord | undefined> {
    const record = this.#records.get(id);
    if (!record) return undefined;
    await this.#queue.add(() => this.#send(record, 'manual'), { priority: 1 });
    return view(record);
  }

  /** Resolves when nothing is buffered, queued or in flight (scheduled retries may still be waiting). */
  async idle(): Promise<void> {
    while (!this.#closed && (this.#reorderBuffer.length > 0 || this.#queue.size > 0 || this.#queue.pending > 0)) {
      if (this.#reorderBuffer.length > 0) await new Promise((resolve) => setTimeout(resolve, REORDER_WINDOW_MS));
      else await this.#queue.onIdle();
    }
  }

  /** Stops every timer, drops what is queued, aborts what is in flight, and closes the sockets. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const timer of this.#timers) timer.cancel();
    this.#timers.clear();
    if (this.#reorderTimer) clearTimeout(this.#reorderTimer);
    this.#reorderBuffer = [];
    this.#queue.clear();
    this.#abort.abort();
    await this.#queue.onIdle();
    this.#agents.http.destroy();
    this.#agents.https.destroy();
  }

  /** The next scheduled attempt, and with probability `duplicateRate` a duplicate POST of it. */
  #dispatch(record: RecordEntry): void {
    this.#submit(() => this.#send(record, 'scheduled'));
    if (this.#options.duplicateRate > 0 && this.#options.random() < this.#options.duplicateRate) {
      this.#submit(() => this.#send(record, 'duplicate'));
    }
  }

  #submit(send: () => Promise<void>): void {
    if (this.#closed) return;
    if (!this.#options.reorder) {
      void this.#queue.add(send);
      return;
    }
    this.#reorderBuffer.push(send);
    this.#reorderTimer ??= setTimeout(() => this.#flushReorderBuffer(), REORDER_WINDOW_MS);
  }

  #flushReorderBuffer(): void {
    this.#reorderTimer = undefined;
    const batch = this.#reorderBuffer;
    this.#reorderBuffer = [];
    // Fisher–Yates with the injectable source, so a seeded run shuffles the same way every time.
    for (let i = batch.length - 1; i > 0; i--) {
      const j = Math.floor(this.#options.random() * (i + 1));
      [batch[i], batch[j]] = [batch[j]!, batch[i]!];
    }
    for (const send of batch) void this.#queue.add(send);
  }

  async #send(record: RecordEntry, kind: SendKind): Promise<void> {
    // A manual retry may have delivered it while this scheduled send waited for a slot.
    if (this.#closed || (kind === 'scheduled' && record.status !== 'pending')) return;
    const endpoint = this.#options.endpoint(record.endpointId);
    if (!endpoint) return;
    const { clock } = this.#options;
    const now = clock.now();
    const sentAt = new Date(now).toISOString();
    const outcome = await postDelivery({
      url: endpoint.url,
      headers: {
        'content-type': 'application/json',
        'user-agent': 'payhooks-simulator/1.0',
        // The webhook event record's id, the same on every retry: what the service's dashboard and API list.
        'x-webhook-event-id': record.id,
        ...signDelivery(record.body, secretsOf(endpoint, now), Math.floor(now / 1000)),
        // Only a manual clock differs from the receiver's: say so, for a receiver in the test-only mode that trusts it.
        ...(clock.mode === 'manual' ? { [SIMULATED_TIME_HEADER]: String(now) } : {}),
      },
      body: record.body,
      timeoutMs: this.#options.deliveryTimeoutMs,
      signal: this.#abort.signal,
      agents: this.#agents,
    });
    // A POST cut short by close() is not a real outcome: keep the history as the receiver saw it.
    if (this.#closed) return;
    const ok = outcome.status !== null && outcome.status >= 200 && outcome.status < 300;
    const attemptNumber = kind === 'duplicate' ? null : record.attempts.length + 1;
    this.#posts.push({
      webhookEventId: record.id,
      eventId: record.eventId,
      eventType: record.eventType,
      endpointId: record.endpointId,
      attemptNumber,
      duplicate: kind === 'duplicate',
      sentAt,
      responseStatus: outcome.status,
      error: outcome.error,
      durationMs: outcome.durationMs,
    });
    this.#options.logger?.info(
      {
        webhookEventId: record.id,
        eventId: record.eventId,
        eventType: record.eventType,
        endpointId: record.endpointId,
        attemptNumber,
        duplicate: kind === 'duplicate',
        status: outcome.status,
        durationMs: outcome.durationMs,
        error: outcome.error ?? undefined,
      },
      ok ? 'delivered' : 'delivery failed',
    );
    if (attemptNumber === null) return;
    record.attempts.push({
      attemptNumber,
      attemptedAt: sentAt,
      responseStatus: outcome.status,
      error: outcome.error,
      durationMs: outcome.durationMs,
    });
    if (ok) return this.#delivered(record);
    if (kind === 'scheduled' && record.status === 'pending') this.#scheduleRetry(record);
  }

  #delivered(record: RecordEntry): void {
    record.status = 'delivered';
    record.nextAttemptAt = null;
  }

  #scheduleRetry(record: RecordEntry): void {
    record.scheduledAttempts += 1;
    const delay = RETRY_DELAYS_MS[record.scheduledAttempts - 1];
    if (delay === undefined) {
      record.status = 'failed';
      record.nextAttemptAt = null;
      return;
    }
    const { clock } = this.#options;
    const dueAt = clock.dueIn(delay);
    record.nextAttemptAt = new Date(dueAt).toISOString();
    const timer = clock.at(dueAt, () => {
      this.#timers.delete(timer);
      if (record.status === 'pending') this.#dispatch(record);
    });
    this.#timers.add(timer);
  }
}

/** The secrets that sign now: the current one, and the previous one during its grace period. */
function secretsOf(endpoint: SimWebhookEndpoint, now: number): string[] {
  const previous = endpoint.previousSecret;
  return previous && previous.expiresAt > now ? [endpoint.secret, previous.secret] : [endpoint.secret];
}

function view(record: RecordEntry): DeliveryRecord {
  const { body: _body, scheduledAttempts: _scheduled, ...rest } = record;
  return { ...rest, attempts: rest.attempts.map((attempt) => ({ ...attempt })) };
}
