/** Options of {@link Batcher}. */
export interface BatcherOptions<T, R> {
  /**
   * Writes a batch; resolves to one result per item, in order. A rejection fails every item of the batch with
   * that error.
   */
  flush: (items: T[]) => Promise<R[]>;
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
   * A write still under way after this long stops counting against `maxConcurrentFlushes` (it goes on, and
   * still settles its items), so that writes stuck on a database that went silent do not hold back the
   * batches after it once the database answers again. Default: never.
   */
  releaseSlotAfterMs?: number | undefined;
}

interface Waiting<T, R> {
  item: T;
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
    return new Promise<R>((resolve, reject) => {
      this.#waiting.push({ item, resolve, reject });
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
    const batch = this.#waiting.splice(0, this.#options.maxItems);
    this.#slotsInUse++;
    let slotHeld = true;
    const freeSlot = () => {
      if (!slotHeld) return;
      slotHeld = false;
      this.#slotsInUse--;
      // Items that arrived while every slot was taken have waited at least as long as their timer would have.
      if (this.#waiting.length > 0) this.#flushNow();
    };
    const slotTimer = this.#options.releaseSlotAfterMs === undefined ? undefined : setTimeout(freeSlot, this.#options.releaseSlotAfterMs);
    slotTimer?.unref();
    const written = this.#write(batch).finally(() => {
      clearTimeout(slotTimer);
      this.#underWay.delete(written);
      freeSlot();
    });
    this.#underWay.add(written);
    this.#schedule();
  }

  async #write(batch: Waiting<T, R>[]): Promise<void> {
    try {
      const results = await this.#options.flush(batch.map((waiting) => waiting.item));
      for (const [i, waiting] of batch.entries()) waiting.resolve(results[i] as R);
    } catch (error) {
      for (const waiting of batch) waiting.reject(error);
    }
  }
}
