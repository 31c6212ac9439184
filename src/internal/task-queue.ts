/**
 * Runs tasks in the order added, at most `concurrency` at once: what the worker needs of a queue, and no more. A task
 * costs an array slot and the promise it returns itself (no id, promise, symbol, timer or microtask of the queue's own,
 * which for a no-op handler cost as much as the rest of the event's run).
 *
 * @example
 * const queue = new TaskQueue(4);
 * queue.add(() => runEvent(entry));
 * await queue.onIdle();
 */
export class TaskQueue {
  readonly #concurrency: number;
  /** Waiting tasks; `#head` is the next to start (a queue without shifting the array on every start). */
  #waiting: (() => Promise<unknown>)[] = [];
  #head = 0;
  #running = 0;
  #idle: (() => void)[] = [];

  constructor(concurrency: number) {
    this.#concurrency = concurrency;
  }

  /** Tasks running now. */
  get pending(): number {
    return this.#running;
  }

  /** Adds a task; it starts once fewer than `concurrency` run. Its rejection is its own caller's to handle: ignored here. */
  add(task: () => Promise<unknown>): void {
    this.#waiting.push(task);
    this.#startWhileRoom();
  }

  /** Drops the tasks that have not started; those running go on. */
  clear(): void {
    this.#waiting = [];
    this.#head = 0;
    this.#settleIdle();
  }

  /** Resolves once nothing runs and nothing waits. */
  onIdle(): Promise<void> {
    if (this.#isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #startWhileRoom(): void {
    while (this.#running < this.#concurrency && this.#head < this.#waiting.length) {
      const task = this.#waiting[this.#head]!;
      this.#waiting[this.#head++] = undefined as never;
      if (this.#head === this.#waiting.length) {
        this.#waiting = [];
        this.#head = 0;
      } else if (this.#head > 1024 && this.#head * 2 > this.#waiting.length) {
        this.#waiting = this.#waiting.slice(this.#head);
        this.#head = 0;
      }
      this.#running++;
      let started: Promise<unknown>;
      try {
        started = task();
      } catch (error) {
        started = Promise.reject(error);
      }
      started.then(this.#done, this.#done);
    }
  }

  readonly #done = (): void => {
    this.#running--;
    this.#startWhileRoom();
    this.#settleIdle();
  };

  #isIdle(): boolean {
    return this.#running === 0 && this.#head >= this.#waiting.length;
  }

  #settleIdle(): void {
    if (!this.#isIdle() || this.#idle.length === 0) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }
}
