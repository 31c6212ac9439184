import { createHash } from 'node:crypto';
import type { ApiClient } from '../client/api-client.js';
import { z } from 'zod';
import type { EventType, WebhookEvent } from '../events/index.js';
import { assertKnownEventTypes } from '../worker/unknown-event-type.js';
import type { Payhooks } from '../payhooks.js';
import type { HandlerContext } from '../worker/handlers.js';
import { inEffectScope } from '../internal/effect-scope.js';
import { accountsField } from './config-fields.js';
import { createHttpHelper, type HttpHelper } from './http-helper.js';
import type { ResourceState } from './resource-state.js';
import { defineSinkKind, registerSink, type Sink } from './sink.js';

/** What a connector's `handle` gets besides the event: the handler's context, plus what a sync needs. */
export interface ConnectorContext extends HandlerContext<ApiClient> {
  /** The connector's name. */
  connector: string;
  /**
   * The same for every attempt of this event by this connector, and different for every other connector or event:
   * send it as the target's idempotency key, or store it beside what was written, so that a retry is not a second
   * write.
   */
  idempotencyKey: string;
  /**
   * The current state of the resource the event is about: read through the API (with an API key), else the
   * mirror's row, else the event's own snapshot. Null for an event that names no resource. Read once per run.
   */
  currentState(): Promise<ResourceState | null>;
  /** HTTP with the connector's timeout; failures classified for retry or dead letter ({@link HttpHelper}). */
  http: HttpHelper;
}

/** What {@link defineConnector} takes. */
export interface ConnectorDefinition<K extends EventType = EventType> {
  /** Stable and unique: completion, retries and dead letters are recorded under `connector:<name>`. */
  name: string;
  /** The event types it handles, or `'*'` for every type in the catalog. */
  events: readonly K[] | '*';
  /** Syncs one event; throw to retry (or a `DeadLetterError` when retrying cannot help). */
  handle(event: WebhookEvent<K>, ctx: ConnectorContext): Promise<void> | void;
  /** Timeout of each `ctx.http` request. Default 10 s. */
  httpTimeoutMs?: number | undefined;
  /** The accounts whose events it handles; left out: every account (docs/sinks.md#sinks-per-account). */
  accounts?: readonly string[] | undefined;
}

/** A connector, checked and ready to register ({@link registerConnector}, or `connectors` in the configuration file). */
export interface Connector<K extends EventType = EventType> extends ConnectorDefinition<K> {
  readonly kind: 'payhooks.connector';
}

const NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/**
 * Defines a connector: a handler with a name, the event types it wants, and a context that reads current state,
 * sends HTTP with timeouts and gives an idempotency key. It gets retries with backoff, dead letters and replay
 * from the worker, and its failure holds back no other connector or sink.
 *
 * @example
 * export default defineConnector({
 *   name: 'crm',
 *   events: ['CUSTOMER_CREATED', 'CUSTOMER_UPDATED'],
 *   async handle(event, ctx) {
 *     const customer = await ctx.currentState();
 *     await ctx.http.request(`${CRM}/contacts`, { json: { id: event.data.id, ...customer?.state }, headers: { 'idempotency-key': ctx.idempotencyKey } });
 *   },
 * });
 */
export function defineConnector<K extends EventType>(definition: ConnectorDefinition<K>): Connector<K> {
  if (typeof definition?.name !== 'string' || !NAME.test(definition.name)) {
    throw new TypeError(
      `defineConnector: name must be 1 to 63 lower-case letters, digits, ".", "_" or "-", starting with a letter or digit, not ${JSON.stringify(definition?.name)}.`,
    );
  }
  if (typeof definition.handle !== 'function') throw new TypeError(`defineConnector ${definition.name}: handle must be a function.`);
  if (definition.events !== '*') {
    if (!Array.isArray(definition.events) || definition.events.length === 0) {
      throw new TypeError(`defineConnector ${definition.name}: events must be a non-empty array of event types, or '*'.`);
    }
    assertKnownEventTypes([...definition.events], false);
  }
  if (definition.accounts !== undefined) {
    const checked = accountsField.safeParse(definition.accounts);
    if (!checked.success)
      throw new TypeError(`defineConnector ${definition.name}: accounts: ${checked.error.issues[0]?.message ?? 'invalid'}.`);
  }
  return Object.freeze({ ...definition, kind: 'payhooks.connector' as const });
}

/** Whether a value is a connector made by {@link defineConnector} (a configuration file's `connectors` entry). */
export function isConnector(value: unknown): value is Connector {
  return value !== null && typeof value === 'object' && (value as { kind?: unknown }).kind === 'payhooks.connector';
}

/**
 * The idempotency key of one event for one consumer: stable across attempts and processes, distinct per consumer.
 *
 * @example
 * idempotencyKey('crm', 'evt_1') // 'ph_…' (32 hex digits)
 */
export function idempotencyKey(consumer: string, eventId: string): string {
  return `ph_${createHash('sha256').update(`${consumer}\u0000${eventId}`).digest('hex').slice(0, 32)}`;
}

/** Options of {@link registerConnector}. */
export interface RegisterConnectorOptions {
  /** The mirror's schema, when the mirror runs: `ctx.currentState()` falls back to its rows without an API key. */
  mirrorSchema?: string | undefined;
}

/**
 * The sink of a connector, as the handler `connector:<name>`: its `handle` gets the event with a
 * {@link ConnectorContext} whose `currentState()` is the state the event's other sinks get too.
 */
export function connectorSink(connector: Connector): Sink {
  if (!isConnector(connector)) throw new TypeError('A connector sink takes a connector made by defineConnector.');
  const handlerName = `connector:${connector.name}`;
  return {
    kind: 'connector',
    name: handlerName,
    eventTypes: connector.events === '*' ? undefined : connector.events,
    accounts: connector.accounts,
    describe: `connector ${connector.name}`,
    async handle(event, ctx, state) {
      if ('unknown' in event) return; // '*' means the catalog; a type this version does not know has no typed data
      const connectorCtx: ConnectorContext = {
        ...ctx,
        transaction: ctx.transaction,
        connector: connector.name,
        idempotencyKey: idempotencyKey(handlerName, event.eventId),
        currentState: state,
        http: sendsAsSteps(
          createHttpHelper({ signal: ctx.signal, timeoutMs: connector.httpTimeoutMs, userAgent: `payhooks connector ${connector.name}` }),
          ctx,
        ),
      };
      await connector.handle(event as WebhookEvent<EventType>, connectorCtx);
    },
    async close() {},
  };
}

/** The most characters of an answer a send kept as a step records (well within the step's cap, escapes included). */
const RECORDED_ANSWER_CHARS = 16 * 1024;

/** What a send kept as a step records of its answer: enough to hand it back on a replay (without its headers). */
interface RecordedAnswer {
  status: number;
  text: string;
  truncated: boolean;
}

/**
 * A connector's `ctx.http` whose writes (anything but GET and HEAD) made outside an explicit `ctx.effect` are steps
 * of their own, `http:1`, `http:2`… in the order sent: a replay after a crash does not send again what the target
 * acknowledged (docs/effects.md#sinks-and-connectors). Each carries the step's idempotency key unless the connector
 * set one; either way the target can apply a repeat once, so an unknown outcome is sent again. A replayed answer
 * has its status and text, not its headers.
 */
function sendsAsSteps(http: HttpHelper, ctx: HandlerContext<ApiClient>): HttpHelper {
  let writes = 0;
  return {
    async request(url, request = {}) {
      const method = (request.method ?? (request.json !== undefined || request.body !== undefined ? 'POST' : 'GET')).toUpperCase();
      if (method === 'GET' || method === 'HEAD' || inEffectScope()) return http.request(url, request);
      writes += 1;
      const answer = await ctx.effect(`http:${writes}`, async (): Promise<RecordedAnswer> => {
        const { status, text, truncated } = await http.request(url, request);
        // Kept within the step's cap: a replay gets the beginning of a long answer, marked truncated.
        const kept = text.slice(0, RECORDED_ANSWER_CHARS);
        return { status, text: kept, truncated: truncated || kept.length < text.length };
      });
      return {
        ...answer,
        headers: new Headers(),
        json<T>(): T {
          if (answer.truncated) throw new Error(`the answer was longer than maxResponseBytes and was cut; it is not JSON as read`);
          return JSON.parse(answer.text) as T;
        },
      };
    },
  };
}

/** The `connector` sink kind: the `connectors` of a `.js`/`.mjs` configuration file (docs/sinks.md#connectors). */
export const connectorKind = defineSinkKind({
  kind: 'connector',
  prefix: 'connector',
  schema: z.custom<Connector>(
    isConnector,
    'expected a connector made by defineConnector (connectors need a .js or .mjs configuration file)',
  ),
  create: connectorSink,
});

/**
 * Registers a connector on a payhooks instance as the handler `connector:<name>`. Call before `hooks.start()`.
 *
 * @example
 * registerConnector(hooks, crmConnector);
 */
export async function registerConnector(
  hooks: Payhooks<ApiClient>,
  connector: Connector,
  options: RegisterConnectorOptions = {},
): Promise<void> {
  if (!isConnector(connector)) throw new TypeError('registerConnector takes a connector made by defineConnector.');
  registerSink(hooks, connectorSink(connector), { store: await hooks.ready(), mirrorSchema: options.mirrorSchema });
}
