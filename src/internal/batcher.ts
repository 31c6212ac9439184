/** Options of {@link Batcher}. */
export interface BatcherOptions<T, R> {
  /**
   * Writes a batch; resolves to one result per item, in order. A rejection fails every item of the batch with
   * that error. With `itemTimeoutMs`, `deadline` is when the last of the batch's items times out (a
   * `performance.now()` time): past it, nobody waits for the write any more, so it had better give up.
   */
  flush: (items: T[], deadline: number | undefined) => Promise<R[]>;
  /** A batch is written as soon as it holds this many items. */
  maxItems: number;
  /** …or this long after its first item arrived, whichever comes first. */
  maxWaitMs: number;
  /**
   * Batches written at once. While that many are under way, new items wait and join the next batch, which is
   * then larger: the slower the writes, the bigger the batches (group commit). 1 keeps batches in order.
   */
  maxConcurrentFlushes: number;
  /**
   * How long the caller of `add` waits at most (it answers for itself past it). An item older than this when
   * its batch is formed is left out and rejected with {@link BatchItemExpiredError}, so that a backlog built
   * while the writes were stuck is not written after the fact, ahead of what arrived since; and a write still
   * under way past its batch's deadline stops counting against `maxConcurrentFlushes` (it goes on, and still
   * settles its items), so that writes stuck on a database that went silent do not hold back the batches after
   * it once the database answers again. Default: items never expire.
   */
  itemTimeoutMs?: number | undefined;
}

/** The rejection of an item that waited past `itemTimeoutMs` before its batch was formed: it was never written. */
export class BatchItemExpiredError extends Error {
  constructor(timeoutMs: number) {
    super(`waited ${timeoutMs} ms for a batch; not written`);
    this.name = 'BatchItemExpiredError';
  }
}

interface Waiting<T, R> {
  item: T;
  /** When the item expires, a `performance.now()` time; Infinity without `itemTimeoutMs`. */
  deadline: number;
  resolve: (result: R) => void;
  reject: (error: unknown) => void;
}

/**
 * Gathers items that arrive close together and writes them as one batch: the group commit behind ingest and
 * behind the worker's outcomes. Each `add` settles when the batch holding its item has been written.
 *
 * @example
 * const batcher = new Batcher({ flush: (rows) => insertAll(rows), maxItems: 200, maxWaitMs: 2, maxConcurrentFlushes: 4 });
 * const outcome = await batcher.add(row);
 */
export class Batcher<T, R> {
  readonly #options: BatcherOptions<T, R>;
  #waiting: Waiting<T, R>[] = [];
  #timer: NodeJS.Timeout | undefined;
  #slotsInUse = 0;
  readonly #underWay = new Set<Promise<void>>();

  constructor(options: BatcherOptions<T, R>) {
    this.#options = options;
  }

  /** Adds an item to the next batch; settles with its result once that batch is written. */
  add(item: T): Promise<R> {
    const { itemTimeoutMs } = this.#options;
    const deadline = itemTimeoutMs === undefined ? Number.POSITIVE_INFINITY : performance.now() + itemTimeoutMs;
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ item, deadline, resolve, reject });
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#waiting.length === 0) return;
    if (this.#waiting.length >= this.#options.maxItems) this.#flushNow();
    else
      this.#timer ??= setTimeout(() => {
        this.#timer = undefined;
        this.#flushNow();
      }, this.#options.maxWaitMs);
  }

  /** Writes everything added so far, without waiting for a timer, and resolves once all of it is written. */
  async drain(): Promise<void> {
    while (this.#waiting.length > 0 || this.#underWay.size > 0) {
      if (this.#waiting.length > 0 && this.#slotsInUse < this.#options.maxConcurrentFlushes) this.#flushNow();
      else await Promise.race(this.#underWay);
    }
  }

  #flushNow(): void {
    if (this.#waiting.length === 0 || this.#slotsInUse >= this.#options.maxConcurrentFlushes) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    const batch = this.#takeBatch();
    if (batch.length === 0) return;
    // Items are added in order, so the last one's deadline is the batch's.
    const deadline = batch.at(-1)!.deadline;
    this.#slotsInUse++;
    let slotHeld = true;
    const freeSlot = () => {
      if (!slotHeld) return;
      slotHeld = false;
      this.#slotsInUse--;
      // Items that arrived while every slot was taken have waited at least as long as their timer would have.
      if (this.#waiting.length > 0) this.#flushNow();
    };
    const slotTimer = Number.isFinite(deadline) ? setTimeout(freeSlot, Math.max(0, deadline - performance.now())) : undefined;
    slotTimer?.unref();
    const written = this.#write(batch, Number.isFinite(deadline) ? deadline : undefined).finally(() => {
      clearTimeout(slotTimer);
      this.#underWay.delete(written);
      freeSlot();
    });
    this.#underWay.add(written);
    this.#schedule();
  }

  /** The next batch from the front of the queue, without the items that expired while they waited. */
  #takeBatch(): Waiting<T, R>[] {
    const { maxItems, itemTimeoutMs } = this.#options;
    if (itemTimeoutMs === undefined) return this.#waiting.splice(0, maxItems);
    const now = performance.now();
    // The queue is in arrival order: the expired items are a prefix of it.
    let expired = 0;
    while (expired < this.#waiting.length && this.#waiting[expired]!.deadline <= now) expired++;
    if (expired > 0) {
      const error = new BatchItemExpiredError(itemTimeoutMs);
      for (const waiting of this.#waiting.splice(0, expired)) waiting.reject(error);
    }
    return this.#waiting.splice(0, maxItems);
  }

  async #write(batch: Waiting<T, R>[], deadline: number | undefined): Promise<void> {
    try {
      const results = await this.#options.flush(
        batch.map((waiting) => waiting.item),
        deadline,
      );
      for (const [i, waiting] of batch.entries()) waiting.resolve(results[i] as R);
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    }
  }
}
