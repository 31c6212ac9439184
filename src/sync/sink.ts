import type { Logger } from 'pino';
import type { z } from 'zod';
import type { ApiClient } from '../client/api-client.js';
import type { EventType, UnknownEvent, WebhookEvent } from '../events/index.js';
import type { Payhooks } from '../payhooks.js';
import type { PayhooksDatabase } from '../store/database.js';
import type { HandlerContext } from '../worker/handlers.js';
import { type ResourceState, readResourceState } from './resource-state.js';
import { describeActiveSpan } from '../internal/tracing.js';

/**
 * The current state of the event's resource, read when first asked: through the API once per event (shared by
 * every sink of it, docs/sinks.md#one-state-read-per-event), else the mirror's row, else the event's own snapshot.
 */
export type SinkState = () => Promise<ResourceState | null>;

/**
 * A sink: one destination the worker keeps in step, run as its own handler, so that its retries, dead letters and
 * per-resource order are its own and its failure holds back no other sink.
 */
export interface Sink {
  /** Its kind, as the configuration file names it (`http-forward`, `rabbitmq`, `redis-streams`, …). */
  readonly kind: string;
  /** The handler name completion is recorded under (`forward:erp`, `broker:rabbitmq`, `mirror`): keep it stable. */
  readonly name: string;
  /** The event types it takes; undefined: every event, types newer than this payhooks included. */
  readonly eventTypes: readonly EventType[] | undefined;
  /**
   * The accounts whose events it takes; undefined: every account. For another account's events its handler is not
   * due: it neither runs nor records anything for them (docs/sinks.md#sinks-per-account).
   */
  readonly accounts?: readonly string[] | undefined;
  /** One line for the start-up log, without credentials. */
  readonly describe: string;
  /** Syncs one event; throw to retry it (a `DeadLetterError` when retrying cannot help). */
  handle(event: WebhookEvent | UnknownEvent, ctx: HandlerContext<ApiClient>, state: SinkState): Promise<void>;
  /** Ends its connections; called after the worker stopped. */
  close(): Promise<void>;
}

/** What a sink kind's `create` gets besides its own settings. */
export interface SinkSetup {
  /** The inbox's database (the mirror's tables live beside it). */
  store: PayhooksDatabase;
  /** The mirror's schema when the mirror runs: the state falls back to its rows without an API key. */
  mirrorSchema?: string | undefined;
  logger: Logger;
}

/**
 * A kind of sink, as the registry (sink-registry.ts) lists it: its name in the configuration file, the schema of
 * its settings (defaults applied, secrets read, stated once, in the kind's own file) and how to make one.
 */
export interface SinkKind<Options extends { name: string } = { name: string }> {
  /** The `kind` of a configuration entry. */
  readonly kind: string;
  /** Completion is recorded under `<prefix>:<name>`: `forward`, `broker`, `connector`, `notify`. */
  readonly prefix: string;
  /** One entry of the configuration file, `kind` left out; its output is what {@link SinkKind.create} takes. */
  readonly schema: z.ZodType<Options, unknown>;
  create(options: Options, setup: SinkSetup): Sink | Promise<Sink>;
}

/**
 * States a sink kind; the identity function, for its types.
 *
 * @example
 * export const relaySink = defineSinkKind({ kind: 'relay', prefix: 'relay', schema, create: (options, setup) => … });
 */
export function defineSinkKind<Options extends { name: string }>(kind: SinkKind<Options>): SinkKind<Options> {
  return kind;
}

/**
 * Registers a sink on a payhooks instance as its own handler, named {@link Sink.name}. Call before `hooks.start()`;
 * close the sink after `hooks.stop()`.
 *
 * @example
 * registerSink(hooks, sink, { store: await hooks.ready(), mirrorSchema: 'payhooks_mirror', logger });
 */
export function registerSink(
  hooks: Payhooks<ApiClient>,
  sink: Sink,
  setup: Pick<SinkSetup, 'store' | 'mirrorSchema'> & {
    /** The configuration entry's `accounts`, which override the sink's own. */
    accounts?: readonly string[] | undefined;
  },
): void {
  const run = async (event: WebhookEvent | UnknownEvent, ctx: HandlerContext<ApiClient>) => {
    // The worker's span of this handler is the sink's: named so, with its kind (docs/tracing.md).
    describeActiveSpan('webhook.sink', { 'payhooks.sink.kind': sink.kind });
    let state: Promise<ResourceState | null> | undefined;
    const read: SinkState = () => {
      state ??= readResourceState(event, {
        api: ctx.api,
        mirror: setup.mirrorSchema ? { store: setup.store, schema: setup.mirrorSchema, account: ctx.account } : undefined,
        receivedAt: ctx.receivedAt,
        signal: ctx.signal,
        shared: ctx.shared,
      });
      return state;
    };
    await sink.handle(event, ctx, read);
  };
  const accounts = setup.accounts ?? sink.accounts;
  if (sink.eventTypes) hooks.on(sink.eventTypes, run, { name: sink.name, accounts });
  else hooks.onAny(run, { name: sink.name, accounts });
}
