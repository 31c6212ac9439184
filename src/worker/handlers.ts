import type { Transaction } from 'kysely';
import type { Logger } from 'pino';
import type { EventType, UnknownEvent, WebhookEvent } from '../events/index.js';
import type { EffectRunner } from './effects.js';
import { assertKnownEventTypes } from './unknown-event-type.js';

/** What a handler gets besides the event. `Api` is the API client's type (undefined when not configured). */
export interface HandlerContext<Api = unknown> {
  /** This run's attempt number for the event, from 1. */
  attempt: number;
  /**
   * When the inbox first stored the event (the database's clock). A read of current state that started after
   * it already reflects what the event announced.
   */
  receivedAt: Date;
  /** A child logger bound to the event's id, type and handler. */
  logger: Logger;
  /**
   * The account (organization) the event belongs to: `default` in a single-account installation (docs/accounts.md).
   * Anything the handler writes about the event's resources belongs to this account too.
   */
  account: string;
  /** The service's API client of the event's account (its key, its URL, its rate budget); undefined without an API key. */
  api: Api | undefined;
  /** Aborted when the worker shuts down or the handler times out. */
  signal: AbortSignal;
  /**
   * A value shared by the handlers of this event during this attempt: the first call with a key runs `compute`
   * (its signal aborts when the worker shuts down), every later call with that key, from any handler of the event,
   * gets the same promise, a rejection included. A new attempt starts afresh. The sinks read the resource's current
   * state through it: one API read per event, however many sinks it has (docs/sinks.md#one-state-read-per-event).
   *
   * @example
   * const customer = await ctx.shared(`customer:${id}`, (signal) => ctx.api!.customers.get(id, { signal }));
   */
  shared<T>(key: string, compute: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` in a transaction on the inbox's database and records this handler's completion in the same
   * transaction: the writes and the completion mark commit together or not at all. Call it at most once.
   *
   * @example
   * await ctx.transaction<MyTables>(async (trx) => {
   *   await trx.insertInto('paid_invoices').values({ id: event.data.invoiceId }).onConflict((c) => c.doNothing()).execute();
   * });
   */
  transaction<DB = Record<string, never>, T = void>(fn: (trx: Transaction<DB>) => Promise<T>): Promise<T>;
  /**
   * A named step that calls the outside world once per event and handler (docs/effects.md): its intent is recorded
   * before `fn` runs and its result (JSON) after; a later attempt of the event gets the recorded result without
   * calling `fn` again. `fn` gets the step's idempotency key (the same on every attempt), which the payhooks API
   * client and a connector's `ctx.http` send on their own. A step whose outcome is unknown (its process died between
   * the call and its record) is called again with the same key when idempotent, and otherwise holds the event as
   * `needs-review` for an operator. Each step name once per run.
   *
   * @example
   * const fee = await ctx.effect('late-fee', () => ctx.api!.invoices.create({ customerId, items: [lateFee] }));
   */
  effect: EffectRunner;
}

/** A handler of one or more event types; its data is typed from the catalog. */
export type EventHandler<K extends EventType, Api = unknown> = (event: WebhookEvent<K>, ctx: HandlerContext<Api>) => Promise<void> | void;

/** A handler of every event, known types and unknown ones alike. */
export type AnyEventHandler<Api = unknown> = (event: WebhookEvent | UnknownEvent, ctx: HandlerContext<Api>) => Promise<void> | void;

/** Options of one registration. */
export interface HandlerOptions {
  /**
   * The name completion is recorded under. Default: the event types and the function's name, plus `#2`, `#3`…
   * for repeats; stable across restarts as long as registrations keep their order. Name handlers that may be
   * renamed or reordered, or a retry would run them again.
   */
  name?: string | undefined;
  /**
   * Accept event types outside the catalog (types the service added after this version of payhooks). Default
   * false: an unknown name is refused with a "did you mean …?" error, because a misspelt type would leave the
   * real one without a handler, its events marked `ignored`. With it, the handler receives the event as
   * {@link UnknownEvent} (`data` unvalidated) when its type is unknown.
   */
  allowUnknownType?: boolean | undefined;
  /**
   * The accounts whose events it handles. Default: every account. For the events of any other account the handler
   * is not due at all: it does not run and records no run or completion for them (a sink filtered by account).
   */
  accounts?: readonly string[] | undefined;
}

/** Options of a registration for types outside the catalog: `allowUnknownType` must be spelt out. */
export type UnknownTypeHandlerOptions = HandlerOptions & { allowUnknownType: true };

/** One registered handler. */
export interface RegisteredHandler<Api = unknown> {
  name: string;
  /** null: every event. */
  types: readonly string[] | null;
  /** null: every account. */
  accounts: ReadonlySet<string> | null;
  run: AnyEventHandler<Api>;
}

/** The handlers of one payhooks instance, in registration order. */
export class HandlerRegistry<Api = unknown> {
  readonly #handlers: RegisteredHandler<Api>[] = [];
  /** `for`'s answers, cleared by each registration: the worker asks once per event. */
  readonly #byType = new Map<string, readonly RegisteredHandler<Api>[]>();
  /** Whether any handler is limited to some accounts: without one, `for` needs no account. */
  #byAccount = false;

  /**
   * Registers `handler` for one or several event types of the catalog; `event.data` is typed. A name outside
   * the catalog is refused at run time too (plain-JavaScript handler modules get no compile-time check), with a
   * "did you mean …?" suggestion ({@link UnknownEventTypeError}).
   *
   * @example
   * registry.on('INVOICE_PAID', async (event) => book(event.data.invoiceId));
   */
  on<K extends EventType>(types: K | readonly K[], handler: EventHandler<K, Api>, options?: HandlerOptions): this;
  /**
   * Registers `handler` for types this version of payhooks does not know, spelt out with
   * `{ allowUnknownType: true }`; the handler gets {@link UnknownEvent}s for them (data not validated).
   *
   * @example
   * registry.on('LOYALTY_POINTS_GRANTED', async (event) => grant(event.data), { allowUnknownType: true });
   */
  on(types: string | readonly string[], handler: AnyEventHandler<Api>, options: UnknownTypeHandlerOptions): this;
  on(types: string | readonly string[], handler: AnyEventHandler<Api>, options: HandlerOptions = {}): this {
    const list = typeof types === 'string' ? [types] : Array.isArray(types) ? [...types] : [];
    if (list.length === 0) throw new TypeError('on() needs an event type name, or a non-empty array of them, as its first argument.');
    if (typeof handler !== 'function') throw new TypeError(`on() needs a handler function as its second argument, not ${typeof handler}.`);
    assertKnownEventTypes(list, options.allowUnknownType === true);
    this.#add(list, handler, options.name ?? `${list.join('|')}:${handler.name || 'handler'}`, options);
    return this;
  }

  /** Registers `handler` for every event, including types this version does not know. */
  onAny(handler: AnyEventHandler<Api>, options: HandlerOptions = {}): this {
    this.#add(null, handler, options.name ?? `*:${handler.name || 'handler'}`, options);
    return this;
  }

  /**
   * The handlers that apply to an event type of an account, in registration order (one list per type, and per
   * account when some handler is limited to accounts, kept until the next registration).
   */
  for(eventType: string, account?: string): readonly RegisteredHandler<Api>[] {
    const key = this.#byAccount && account !== undefined ? `${eventType}\n${account}` : eventType;
    let handlers = this.#byType.get(key);
    if (!handlers) {
      handlers = this.#handlers.filter(
        (h) =>
          (h.types === null || h.types.includes(eventType)) && (h.accounts === null || account === undefined || h.accounts.has(account)),
      );
      this.#byType.set(key, handlers);
    }
    return handlers;
  }

  /** The event types handlers are registered for (sorted, without `onAny` handlers), for logs. */
  get types(): string[] {
    return [...new Set(this.#handlers.flatMap((h) => h.types ?? []))].sort();
  }

  get size(): number {
    return this.#handlers.length;
  }

  #add(types: string[] | null, run: AnyEventHandler<Api>, name: string, options: HandlerOptions): void {
    const explicit = options.name !== undefined;
    if (options.accounts !== undefined && (!Array.isArray(options.accounts) || options.accounts.length === 0)) {
      throw new TypeError(
        `The accounts of handler ${JSON.stringify(name)} must be a non-empty array of account ids, or left out for every account.`,
      );
    }
    let unique = name;
    if (this.#handlers.some((h) => h.name === unique)) {
      if (explicit) throw new Error(`A handler named ${JSON.stringify(name)} is already registered; handler names must be unique.`);
      for (let n = 2; this.#handlers.some((h) => h.name === unique); n++) unique = `${name}#${n}`;
    }
    const accounts = options.accounts ? new Set(options.accounts) : null;
    this.#handlers.push({ name: unique, types, accounts, run });
    this.#byAccount ||= accounts !== null;
    this.#byType.clear();
  }
}
