// A sender as the payment service is one: deliveries at a steady rate, each retried with backoff on a 5xx or a
// connection failure until it is acknowledged, through a bounded number of connections. Shared by the failover tests.
import type { SignatureScheme } from '../../src/signature/index.js';
import { envelope, signedDelivery } from './deliveries.js';

/** Requests in flight at once, at most: a sender has a bounded number of connections (the simulator's slots). */
const SENDER_SLOTS = 64;
/** How long a delivery keeps being retried: bounded, as the service's retries are. */
const GIVE_UP_MS = 90_000;

/** A counting semaphore: take() waits for a free slot. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];
  constructor(count: number) {
    this.#free = count;
  }
  async take(): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return;
    }
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }
  give(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}

/** What the sender saw. */
export interface LoadFigures {
  sent: number;
  acked: Set<string>;
  status503: number;
  /** Answers other than 200 and 503, by status (a load balancer's 502 when a receiver dies mid-request). */
  otherStatus: Map<number, number>;
  connectionErrors: number;
  longestGapMs: number;
  errorReasons: Map<string, number>;
  /** The 503s by the start of their message. */
  reasons503: Map<string, number>;
  /** The longest the receiver took to answer one request: its ack budget bounds it. */
  slowestAnswerMs: number;
}

/** What {@link sendUnderLoad} sends, and the fault it brings about mid-run. */
export interface LoadPlan {
  url: string;
  scheme: SignatureScheme;
  /** Names the run: the events are `evt_<run>_<i>`. */
  run: string;
  /** Deliveries a second. */
  rate: number;
  durationMs: number;
  faultAtMs: number;
  fault: () => Promise<void> | void;
}

/**
 * Posts `rate` deliveries a second for `durationMs`, each retried with backoff until it gets a 2xx (as the service
 * retries: a 5xx or a connection failure is tried again), through at most SENDER_SLOTS requests at once; runs `fault`
 * at `faultAtMs`. Resolves when every delivery was acknowledged or gave up.
 */
export async function sendUnderLoad(plan: LoadPlan): Promise<LoadFigures> {
  const { url, scheme, run, rate, durationMs, faultAtMs, fault } = plan;
  const figures: LoadFigures = {
    sent: 0,
    acked: new Set(),
    status503: 0,
    otherStatus: new Map(),
    connectionErrors: 0,
    longestGapMs: 0,
    errorReasons: new Map(),
    reasons503: new Map(),
    slowestAnswerMs: 0,
  };
  const slots = new Slots(SENDER_SLOTS);
  const started = performance.now();
  let last2xx = started;
  const deliver = async (i: number) => {
    const eventId = `evt_${run}_${i}`;
    const body = envelope(eventId);
    // Its own customer each, so that the worker may run them side by side (one resource's events run one at a time).
    body.data.id = `cus_${run}_${i}`;
    const giveUpAt = performance.now() + GIVE_UP_MS;
    let attempt = 0;
    while (performance.now() < giveUpAt) {
      const delivery = signedDelivery(scheme, body);
      await slots.take();
      const sentAt = performance.now();
      let status = 0;
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: delivery.headers,
          body: delivery.body,
          signal: AbortSignal.timeout(10_000),
        });
        const text = await response.text();
        status = response.status;
        if (status === 503) {
          // Whose 503: the receiver's error body names its reason; a load balancer's is its own page.
          const reason = /"message":"([^"]{0,80})/.exec(text)?.[1] ?? text.replace(/\s+/g, ' ').slice(0, 60);
          figures.reasons503.set(reason, (figures.reasons503.get(reason) ?? 0) + 1);
        }
        figures.slowestAnswerMs = Math.max(figures.slowestAnswerMs, performance.now() - sentAt);
      } catch (error) {
        figures.connectionErrors++;
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        const reason = cause?.code ?? cause?.message ?? (error as Error).message;
        figures.errorReasons.set(reason, (figures.errorReasons.get(reason) ?? 0) + 1);
      } finally {
        slots.give();
      }
      if (status === 200) {
        const now = performance.now();
        figures.longestGapMs = Math.max(figures.longestGapMs, now - last2xx);
        last2xx = now;
        figures.acked.add(eventId);
        return;
      }
      if (status === 503) figures.status503++;
      else if (status !== 0) figures.otherStatus.set(status, (figures.otherStatus.get(status) ?? 0) + 1);
      // Exponential backoff with jitter, as a sender retries (a fixed 100 ms made a retry storm of the backlog).
      attempt++;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 100 * 2 ** attempt) * (0.5 + Math.random() / 2)));
    }
  };
  const deliveries: Promise<void>[] = [];
  const total = (rate * durationMs) / 1000;
  let faulted: Promise<void> | undefined;
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (faulted === undefined && performance.now() - started >= faultAtMs) faulted = Promise.resolve(fault());
    deliveries.push(deliver(i));
    figures.sent++;
  }
  await Promise.all([...deliveries, faulted]);
  return figures;
}

/** The figures as one line for the log. */
export function describeFigures(figures: LoadFigures): string {
  return (
    `${figures.sent} deliveries, ${figures.acked.size} acknowledged; ${figures.status503} answers 503 ${JSON.stringify(Object.fromEntries(figures.reasons503))}, ` +
    `other non-2xx ${JSON.stringify(Object.fromEntries(figures.otherStatus))}, ${figures.connectionErrors} connection errors ` +
    `${JSON.stringify(Object.fromEntries(figures.errorReasons))}; longest time without a 2xx ${Math.round(figures.longestGapMs)} ms; ` +
    `slowest answer ${Math.round(figures.slowestAnswerMs)} ms`
  );
}
