import { sql } from 'kysely';
import type { ApiClient } from '../client/api-client.js';
import { NotFoundError } from '../client/errors.js';
import { resourceKeyOf, type UnknownEvent, type WebhookEvent } from '../events/index.js';
import type { PayhooksDatabase } from '../store/database.js';
import { quoteIdent } from '../store/quote-ident.js';
import type { HandlerContext } from '../worker/handlers.js';

/** The kinds of resource an event can be about (the first part of its resource key). */
export type ResourceKind = 'customer' | 'invoice' | 'payment' | 'dispute' | 'subscription';

/** Where a resource's state came from, best first. */
export type StateSource = 'api' | 'mirror' | 'event';

/** The state of the resource an event is about, as connectors and the forward and broker sinks see it. */
export interface ResourceState {
  kind: ResourceKind;
  id: string;
  /** `api`: read now; `mirror`: the mirror's row (the newest version it has seen); `event`: the event's own snapshot. */
  source: StateSource;
  /** When the state was read (the API), written (the mirror) or received (the event), ISO 8601. */
  readAt: string;
  state: Record<string, unknown>;
}

/** What {@link readResourceState} may read from. */
export interface StateSources {
  api?: ApiClient | undefined;
  /** The mirror's schema on the inbox's database, when the mirror runs, and the event's account (whose row is read). */
  mirror?: { store: PayhooksDatabase; schema: string; account: string } | undefined;
  receivedAt: Date;
  signal?: AbortSignal | undefined;
  /** The handler's `ctx.shared`: the API read is then made once per event and shared by every sink of it. */
  shared?: HandlerContext['shared'] | undefined;
}

/** What one read of a resource from the API found: its answer (undefined when not found), and when it was made. */
export interface ApiRead {
  answer: unknown;
  /** When the read started, ISO 8601. */
  readAt: string;
}

const MIRROR_TABLE_OF: Record<ResourceKind, string> = {
  customer: 'customers',
  invoice: 'invoices',
  payment: 'payments',
  dispute: 'disputes',
  subscription: 'subscriptions',
};

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** The resource an event is about: the kind and id of its resource key, or null for an event that names none. */
export function eventResource(event: WebhookEvent | UnknownEvent): { kind: ResourceKind; id: string } | null {
  const key = resourceKeyOf(event.eventType, event.data);
  if (!key) return null;
  const at = key.indexOf(':');
  const kind = key.slice(0, at);
  if (!(kind in MIRROR_TABLE_OF)) return null;
  return { kind: kind as ResourceKind, id: key.slice(at + 1) };
}

/** The event's own copy of its resource: the data itself for customer events, else the embedded object. */
function snapshotOf(event: WebhookEvent | UnknownEvent, kind: ResourceKind): Record<string, unknown> {
  const data = event.data as Record<string, unknown>;
  if (kind === 'customer' && event.eventType.startsWith('CUSTOMER_')) return data;
  const embedded = data[kind];
  return isObject(embedded) ? embedded : data;
}

/**
 * Reads one resource from the API, once per event when given the handler's `ctx.shared`: the mirror, the
 * connectors and the forward and broker sinks of an event then share one read, one call on the rate budget.
 * A "not found" answers `undefined`; any other failure rejects (every sink of the event fails this attempt).
 *
 * @example
 * const { answer } = await readApiResource(ctx.api, 'customer', 'cus_1', { shared: ctx.shared, signal: ctx.signal });
 */
export function readApiResource(
  api: ApiClient,
  kind: ResourceKind,
  id: string,
  options: { shared?: HandlerContext['shared'] | undefined; signal?: AbortSignal | undefined } = {},
): Promise<ApiRead> {
  const read = async (signal: AbortSignal | undefined): Promise<ApiRead> => {
    const readAt = new Date().toISOString();
    return { answer: await readFromApi(api, kind, id, signal), readAt };
  };
  return options.shared ? options.shared(`payhooks.api-read:${kind}:${id}`, read) : read(options.signal);
}

async function readFromApi(api: ApiClient, kind: ResourceKind, id: string, signal: AbortSignal | undefined): Promise<unknown> {
  try {
    if (kind === 'customer') return await api.customers.get(id, { signal });
    if (kind === 'invoice') return await api.invoices.get(id, { signal });
    if (kind === 'payment') return await api.payments.get(id, { signal });
  } catch (err) {
    if (err instanceof NotFoundError) return undefined;
    throw err;
  }
  return undefined; // the spec shows no read for disputes and subscriptions
}

async function readFromMirror(
  mirror: NonNullable<StateSources['mirror']>,
  kind: ResourceKind,
  id: string,
): Promise<{ data: unknown; synced_at: Date } | undefined> {
  const table = sql.raw(`${quoteIdent(mirror.schema)}.${quoteIdent(MIRROR_TABLE_OF[kind])}`);
  const { rows } = await sql<{
    data: unknown;
    synced_at: Date;
  }>`select data, synced_at from ${table} where account = ${mirror.account} and id = ${id}`.execute(mirror.store.db.withoutPlugins());
  return rows[0];
}

/**
 * The current state of the resource an event is about, from the best source at hand: the API (read now), else
 * the mirror's row, else the event's own snapshot. Null for an event that names no resource. An API error other
 * than "not found" is thrown, so the handler fails and is retried rather than sending a stale state.
 *
 * @example
 * const resource = await readResourceState(event, { api, receivedAt: ctx.receivedAt, signal: ctx.signal });
 * resource?.source // 'api'
 */
export async function readResourceState(event: WebhookEvent | UnknownEvent, from: StateSources): Promise<ResourceState | null> {
  const resource = eventResource(event);
  if (!resource) return null;
  const { kind, id } = resource;
  if (from.api) {
    const { answer, readAt } = await readApiResource(from.api, kind, id, { shared: from.shared, signal: from.signal });
    if (isObject(answer)) return { kind, id, source: 'api', readAt, state: answer };
  }
  if (from.mirror) {
    const row = await readFromMirror(from.mirror, kind, id);
    if (row && isObject(row.data)) return { kind, id, source: 'mirror', readAt: new Date(row.synced_at).toISOString(), state: row.data };
  }
  return { kind, id, source: 'event', readAt: from.receivedAt.toISOString(), state: snapshotOf(event, kind) };
}
