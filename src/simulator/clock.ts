import { MAX_TIMER_MS, parseDuration } from '../internal/duration.js';

/** How the simulator's clock moves: with the machine's (`real`) or only when told to (`manual`). */
export type ClockMode = 'real' | 'manual';

/** A job the clock runs at a simulated time. */
export interface ClockTimer {
  readonly dueAt: number;
  cancel(): void;
}

/** What one {@link SimulatorClock.advance} did. */
export interface ClockAdvance {
  /** Simulated time before and after, ms since the epoch. */
  from: number;
  to: number;
  /** How many timers (retries, collections) came due and ran on the way, in order. */
  fired: number;
}

/** Options of {@link SimulatorClock}. */
export interface SimulatorClockOptions {
  mode: ClockMode;
  /** Divides the delays of timers on the real clock (the simulator's `timeScale`); a manual clock ignores it. */
  timeScale: number;
  /** A manual clock's first reading, ms since the epoch. Default: the machine's time at start. */
  startAt?: number | undefined;
  /** Called after each timer a manual advance runs, to let what it started finish (deliveries) before the next. */
  settle?: (() => Promise<void>) | undefined;
}

interface Pending {
  dueAt: number;
  seq: number;
  run: () => void;
  cancelled: boolean;
  handle: NodeJS.Timeout | undefined;
}

/** A manual clock refuses to move further than this in one call (a mistyped timestamp, not a plan). */
const MAX_ADVANCE_MS = 10 * 366 * 24 * 60 * 60_000;

/**
 * The simulator's time. On the `real` clock it reads `Date.now()` and timers are `setTimeout`s (their delays
 * divided by the time scale, as before this clock existed). On the `manual` clock time stands still until
 * {@link advance}: the timers that come due on the way run one at a time, in due order (ties in the order they were
 * set), each at its own simulated instant, and the clock waits for what each started (its deliveries) before moving
 * on. So three days of retries play in seconds, in order, each delivery signed with its simulated time.
 */
export class SimulatorClock {
  readonly mode: ClockMode;
  readonly #timeScale: number;
  readonly #settle: () => Promise<void>;
  readonly #pending = new Set<Pending>();
  #now: number;
  #seq = 0;
  #chain: Promise<unknown> = Promise.resolve();
  #closed = false;

  constructor(options: SimulatorClockOptions) {
    this.mode = options.mode;
    this.#timeScale = options.timeScale;
    this.#settle = options.settle ?? (async () => {});
    this.#now = options.startAt ?? Date.now();
  }

  /** The simulated time, ms since the epoch. */
  now(): number {
    return this.mode === 'real' ? Date.now() : this.#now;
  }

  /** The simulated time as an ISO 8601 string. */
  iso(): string {
    return new Date(this.now()).toISOString();
  }

  /** The simulated time `delayMs` from now, as the schedule sees it (the real clock divides by the time scale). */
  dueIn(delayMs: number): number {
    return this.now() + (this.mode === 'real' ? delayMs / this.#timeScale : delayMs);
  }

  /**
   * Runs `run` at simulated time `dueAt`. On the real clock a pending timer does not keep the process alive (the
   * server does). Nothing runs after {@link close}.
   */
  at(dueAt: number, run: () => void): ClockTimer {
    const pending: Pending = { dueAt, seq: this.#seq++, run, cancelled: false, handle: undefined };
    const cancel = () => {
      pending.cancelled = true;
      if (pending.handle) clearTimeout(pending.handle);
      this.#pending.delete(pending);
    };
    if (this.#closed) return { dueAt, cancel: () => {} };
    this.#pending.add(pending);
    if (this.mode === 'real') this.#arm(pending);
    return { dueAt, cancel };
  }

  /** The timers not yet run, earliest first. */
  due(): number[] {
    return [...this.#pending].map((p) => p.dueAt).sort((a, b) => a - b);
  }

  /**
   * Moves a manual clock forward by `ms`, running every timer due on the way, in order. Calls are serialised: a second advance starts where the first ended. Throws a RangeError on
   * the real clock, for a negative step, or for a step over ten years.
   */
  advance(ms: number): Promise<ClockAdvance> {
    return this.#serialised(() => {
      if (!Number.isFinite(ms) || ms < 0 || ms > MAX_ADVANCE_MS) {
        throw new RangeError(`The clock moves forward only, by at most ten years: ${ms} ms is out of range.`);
      }
      return this.#advanceBy(ms);
    });
  }

  /** Moves a manual clock to `target` (ms since the epoch); a time in the past is a RangeError. */
  advanceTo(target: number): Promise<ClockAdvance> {
    return this.#serialised(() => {
      if (!Number.isFinite(target) || target < this.#now) {
        throw new RangeError(
          `${Number.isFinite(target) ? new Date(target).toISOString() : String(target)} is before the simulator's time ${this.iso()}: the clock moves forward only.`,
        );
      }
      if (target - this.#now > MAX_ADVANCE_MS) throw new RangeError('The clock moves at most ten years in one step.');
      return this.#advanceBy(target - this.#now);
    });
  }

  #serialised(step: () => Promise<ClockAdvance>): Promise<ClockAdvance> {
    if (this.mode !== 'manual') {
      return Promise.reject(
        new RangeError('The simulator runs on the real clock; start it with --clock manual (clock: "manual") to advance it.'),
      );
    }
    const next = this.#chain.then(step);
    this.#chain = next.catch(() => undefined);
    return next;
  }

  /** Cancels every timer; nothing runs afterwards. */
  close(): void {
    this.#closed = true;
    for (const pending of this.#pending) if (pending.handle) clearTimeout(pending.handle);
    this.#pending.clear();
  }

  async #advanceBy(ms: number): Promise<ClockAdvance> {
    const from = this.#now;
    const to = from + ms;
    let fired = 0;
    for (;;) {
      if (this.#closed) break;
      const next = this.#earliest();
      if (!next || next.dueAt > to) break;
      this.#pending.delete(next);
      this.#now = Math.max(this.#now, next.dueAt);
      fired += 1;
      next.run();
      await this.#settle();
    }
    this.#now = Math.max(this.#now, to);
    return { from, to: this.#now, fired };
  }

  #earliest(): Pending | undefined {
    let best: Pending | undefined;
    for (const p of this.#pending) {
      if (!best || p.dueAt < best.dueAt || (p.dueAt === best.dueAt && p.seq < best.seq)) best = p;
    }
    return best;
  }

  #arm(pending: Pending): void {
    // A Node timer holds at most MAX_TIMER_MS (about 24.8 days); a longer wait is re-armed in steps.
    const wait = Math.min(Math.max(0, pending.dueAt - Date.now()), MAX_TIMER_MS);
    pending.handle = setTimeout(() => {
      if (pending.cancelled || this.#closed) return;
      if (pending.dueAt > Date.now()) return this.#arm(pending);
      this.#pending.delete(pending);
      pending.run();
    }, wait);
    pending.handle.unref();
  }
}

/** The simulator's clock as `simulator.clock` hands it to tests. */
export interface SimulatorClockControl {
  /** `real` or `manual` (the `clock` option). */
  readonly mode: ClockMode;
  /** The simulated time. */
  now(): Date;
  /** When each pending retry or collection is due, earliest first. */
  pending(): Date[];
  /**
   * Moves a manual clock forward by a duration (`'1d'`, `'2h30m'`, or ms) and resolves once every retry and
   * collection due on the way has run, in order, and its deliveries have ended. Rejects with a RangeError on the
   * real clock or for a step backwards.
   *
   * @example
   * await simulator.clock.advance('1d');
   */
  advance(by: string | number): Promise<ClockAdvance>;
  /** Moves a manual clock forward to a time (a Date, an ISO 8601 string or ms since the epoch). */
  advanceTo(time: Date | string | number): Promise<ClockAdvance>;
}

/** The public face of a {@link SimulatorClock}. */
export function clockControl(clock: SimulatorClock): SimulatorClockControl {
  return {
    mode: clock.mode,
    now: () => new Date(clock.now()),
    pending: () => clock.due().map((at) => new Date(at)),
    advance: (by) => clock.advance(typeof by === 'number' ? by : parseDuration(by)),
    advanceTo: (time) => clock.advanceTo(new Date(time).getTime()),
  };
}
