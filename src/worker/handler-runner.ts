import { sql, type Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { PayhooksDatabase } from '../store/database.js';
import { markHandlerCompleted } from '../store/outcomes.js';
import type { PayhooksTables } from '../store/schema.js';
import { createEffectRunner, type EffectRunner } from './effects.js';
import { HandlerTimeoutError } from './handler-errors.js';
import type { HandlerContext, RegisteredHandler } from './handlers.js';
import { type AttemptRun, shutdownSignal } from './in-flight.js';

/** What a {@link HandlerRunner} needs. */
export interface HandlerRunnerOptions<Api> {
  store: PayhooksDatabase;
  api: Api | undefined;
  /** The API client of an account, when it has its own (undefined: `api`). */
  apiForAccount?: ((account: string) => Api | undefined) | undefined;
  handlerTimeoutMs: number;
  /** The `set local search_path …` statement `ctx.transaction` runs first, for the app's own tables. */
  searchPath: string;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown> | null | undefined)?.then === 'function';
}

/**
 * Runs one handler for one attempt of an event: builds its `ctx` (logger, signal, `shared`, `effect`, `transaction`,
 * each made on first use, so that a handler that uses none costs none of them) and runs it under its timeout.
 */
export class HandlerRunner<Api> {
  readonly #options: HandlerRunnerOptions<Api>;

  constructor(options: HandlerRunnerOptions<Api>) {
    this.#options = options;
  }

  /** Runs `handler` under its timeout; resolves to whether it recorded its completion in `ctx.transaction`. */
  async run(
    handler: RegisteredHandler<Api>,
    event: Parameters<RegisteredHandler<Api>['run']>[0],
    attemptRun: AttemptRun,
  ): Promise<boolean> {
    const { entry } = attemptRun;
    const { handlerTimeoutMs } = this.#options;
    // The handler's signal is made when it first asks for it: a handler that uses none costs no AbortController or listener.
    let controller: AbortController | undefined;
    /** Why the handler's signal is aborted, once it is (a timeout), whether or not it was made yet. */
    let abortedBy: unknown;
    const onShutdown = () => controller?.abort(entry.abort?.signal.reason);
    const signal = (): AbortSignal => {
      if (controller) return controller.signal;
      controller = new AbortController();
      if (abortedBy !== undefined) controller.abort(abortedBy);
      else {
        const shutdown = shutdownSignal(entry);
        if (shutdown.aborted) controller.abort(shutdown.reason);
        else shutdown.addEventListener('abort', onShutdown, { once: true });
      }
      return controller.signal;
    };
    const state = { markedInTransaction: false, inTransaction: false };
    const ctx = this.#context(handler, attemptRun, signal, state);
    try {
      const result = handler.run(event, ctx);
      // A handler that returned without a promise has finished: there is nothing left to time out.
      if (!isThenable(result)) return state.markedInTransaction;
      let timer: NodeJS.Timeout | undefined;
      await new Promise<void>((resolve, reject) => {
        timer = setTimeout(() => {
          const error = new HandlerTimeoutError(handler.name, handlerTimeoutMs);
          abortedBy = error;
          controller?.abort(error);
          reject(error);
        }, handlerTimeoutMs);
        result.then(() => resolve(), reject);
      }).finally(() => clearTimeout(timer));
    } finally {
      if (controller) entry.abort?.signal.removeEventListener('abort', onShutdown);
    }
    return state.markedInTransaction;
  }

  #context(
    handler: RegisteredHandler<Api>,
    attemptRun: AttemptRun,
    signal: () => AbortSignal,
    state: { markedInTransaction: boolean; inTransaction: boolean },
  ): HandlerContext<Api> {
    const { store, api, apiForAccount, searchPath } = this.#options;
    const { entry } = attemptRun;
    const { account } = entry.event;
    let handlerLog: Logger | undefined;
    let effect: EffectRunner | undefined;
    const ctx: HandlerContext<Api> = {
      attempt: entry.event.attempt,
      receivedAt: entry.event.receivedAt,
      account,
      get logger() {
        handlerLog ??= attemptRun.log.child({ handler: handler.name });
        return handlerLog;
      },
      api: apiForAccount?.(account) ?? api,
      get signal() {
        return signal();
      },
      shared<T>(key: string, compute: (signal: AbortSignal) => Promise<T>): Promise<T> {
        attemptRun.shared ??= new Map();
        let value = attemptRun.shared.get(key) as Promise<T> | undefined;
        if (!value) {
          // The shutdown signal, not this handler's: a timeout of the handler that started it must not fail the others' wait.
          value = Promise.resolve().then(() => compute(shutdownSignal(entry)));
          // Awaited by whoever asks; an unasked rejection must not stop the process.
          value.catch(() => undefined);
          attemptRun.shared.set(key, value);
        }
        return value;
      },
      // Made on first use: a handler that calls no effect costs nothing more.
      effect(name, fn, stepOptions) {
        // Its record is written on a connection of its own and must not wait for (nor roll back with) the handler's
        // transaction; on the embedded database, which has one connection, it would wait for ever.
        if (state.inTransaction)
          return Promise.reject(
            new TypeError(
              `ctx.effect was called inside ctx.transaction by handler ${handler.name}; call it before or after the transaction.`,
            ),
          );
        effect ??= createEffectRunner({
          store,
          account: entry.event.account,
          eventId: entry.event.eventId,
          receivedAt: entry.event.receivedAt,
          handler: handler.name,
          attempt: entry.event.attempt,
          signal: signal(),
          logger: ctx.logger,
        });
        return effect(name, fn, stepOptions);
      },
      async transaction<DB, T>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T> {
        if (state.markedInTransaction)
          throw new Error(`ctx.transaction was already used by handler ${handler.name} for this event; call it once.`);
        state.markedInTransaction = true;
        return store.db.transaction().execute(async (trx: Transaction<PayhooksTables>) => {
          // The handler's own tables are not in the payhooks schema: hand it the connection unqualified, with the
          // app's schema first on the search path, where the app's migrations put them. `local`: for this transaction only.
          const appTrx = trx.withoutPlugins();
          await sql.raw(searchPath).execute(appTrx);
          state.inTransaction = true;
          const result = await fn(appTrx as unknown as Transaction<DB>).finally(() => {
            state.inTransaction = false;
          });
          await markHandlerCompleted(trx, entry.event, handler.name);
          return result;
        });
      },
    };
    return ctx;
  }
}
