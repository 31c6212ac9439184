import type { ApiClient } from '../../client/api-client.js';
import type { EventType, WebhookEvent } from '../../events/index.js';
import type { ApiCustomer, ApiInvoice, ApiPayment } from '../../events/rest-contract.js';
import type { Kysely } from 'kysely';
import { compareText } from '../../internal/compare-text.js';
import { z } from 'zod';
import type { Payhooks } from '../../payhooks.js';
import { isSchemaName, type PayhooksDatabase } from '../../store/database.js';
import { migrateMirror } from '../../store/migrate.js';
import type { HandlerContext } from '../../worker/handlers.js';
import { eventTypesField } from '../config-fields.js';
import { readApiResource } from '../resource-state.js';
import { registerSink, type Sink } from '../sink.js';
import { ensureMirrorAccounts } from './accounts.js';
import { mirrorTargets, type MirrorTarget } from './event-targets.js';
import { customerFromApi, invoiceFromApi, type MirrorState, paymentFromApi } from './states.js';
import { readCoveredSince, touchMirrorRow, writeMirrorState } from './write.js';

/** The defaults of the mirror sink. */
export const MIRROR_DEFAULTS = {
  /** The schema its tables live in, apart from the inbox's. */
  schema: 'payhooks_mirror',
  /** The name its completions are recorded under. */
  handlerName: 'mirror',
} as const;

/** Options of {@link registerMirror}. */
export interface MirrorOptions {
  /** Default `payhooks_mirror`. */
  schema?: string | undefined;
  /** The event types it mirrors. Default: every type in the catalog. */
  eventTypes?: readonly EventType[] | undefined;
}

const KIND_OF = { customers: 'customer', invoices: 'invoice', payments: 'payment' } as const;

/**
 * Reads the current state of one target from the API, through the read the event's sinks share; null when the
 * service does not know the resource (the caller then falls back to the event's snapshot). `dbNow` stamps a read
 * this call made; a read another sink of the event made earlier is stamped with the event's receipt instead, a
 * time it certainly started after, so that the coverage check never counts it as newer than it is.
 */
async function readCurrent(
  ctx: HandlerContext<ApiClient> & { api: ApiClient },
  target: Extract<MirrorTarget, { kind: 'read' }>,
  dbNow: Date,
): Promise<MirrorState | null> {
  let mine = false;
  const { answer } = await readApiResource(ctx.api, KIND_OF[target.table], target.id, {
    signal: ctx.signal,
    shared: (key, compute) =>
      ctx.shared(key, (signal) => {
        mine = true;
        return compute(signal);
      }),
  });
  if (answer === undefined) return null;
  const readAt = mine ? dbNow : ctx.receivedAt;
  switch (target.table) {
    case 'customers':
      return customerFromApi(answer as ApiCustomer, readAt);
    case 'invoices':
      return invoiceFromApi(answer as ApiInvoice, readAt);
    case 'payments':
      return paymentFromApi(answer as ApiPayment, target.links, readAt);
  }
}

/**
 * Mirrors one event into the rows of its account (`ctx.account`): reads the current state of each resource it
 * concerns (with the account's API key), or takes the event's snapshot, and writes them with guarded upserts keyed
 * by (account, id) in the transaction that records the handler's completion. A resource already read after this
 * event was received is not read again.
 */
export async function mirrorEvent(
  event: WebhookEvent,
  ctx: HandlerContext<ApiClient>,
  store: PayhooksDatabase,
  schema: string,
): Promise<{ written: number; reads: number; skippedReads: number }> {
  const cause = { eventId: event.eventId, eventType: event.eventType };
  const states: MirrorState[] = [];
  const touched: Extract<MirrorTarget, { kind: 'read' }>[] = [];
  let reads = 0;
  const db = store.db.withoutPlugins();
  for (const target of mirrorTargets(event)) {
    if (target.kind === 'snapshot') {
      states.push(target.state);
      continue;
    }
    if (!ctx.api) {
      if (target.snapshot) states.push(target.snapshot);
      continue;
    }
    const coverage = await readCoveredSince(db, schema, ctx.account, target.table, target.id, ctx.receivedAt);
    if (coverage.covered) {
      touched.push(target);
      continue;
    }
    reads++;
    const current = await readCurrent({ ...ctx, api: ctx.api }, target, coverage.now);
    if (current) states.push(current);
    else if (target.snapshot) {
      ctx.logger.warn({ table: target.table, id: target.id }, 'the API does not know this resource; mirrored from the event instead');
      states.push(target.snapshot);
    }
  }
  // Every row in one order, by table and then id: two events of one invoice and its payment (different resources, so
  // run at once) would otherwise lock the same two rows in opposite orders and deadlock on the real server.
  const rows = [
    ...states.map((state) => ({
      table: state.table,
      id: state.id,
      write: (trx: Kysely<Record<string, never>>) => writeMirrorState(trx, schema, ctx.account, state, cause),
    })),
    ...touched.map((target) => ({
      table: target.table,
      id: target.id,
      write: async (trx: Kysely<Record<string, never>>) => {
        await touchMirrorRow(trx, schema, ctx.account, target.table, target.id, cause);
        return false;
      },
    })),
  ].sort((a, b) => compareText(a.table, b.table) || compareText(a.id, b.id));
  let written = 0;
  await ctx.transaction(async (trx) => {
    for (const row of rows) if (await row.write(trx)) written++;
  });
  return { written, reads, skippedReads: touched.length };
}

/** The `mirror` key of the configuration file: `true`/`false`, or its options (docs/mirror.md). */
export const mirrorConfigSchema = z.union([
  z.boolean(),
  z.strictObject({
    /** Default true. */
    enabled: z.boolean().optional(),
    /** Default `payhooks_mirror`. */
    schema: z
      .string()
      .refine(isSchemaName, 'expected a schema name of lower-case letters, digits and underscores, starting with a letter or underscore')
      .optional(),
    eventTypes: eventTypesField.optional(),
  }),
]);

/** The mirror's sink, as the handler `mirror`, on a schema already migrated. */
export function mirrorSink(store: PayhooksDatabase, options: { schema: string; eventTypes?: readonly EventType[] | undefined }): Sink {
  return {
    kind: 'mirror',
    name: MIRROR_DEFAULTS.handlerName,
    eventTypes: options.eventTypes,
    describe: `Postgres mirror in schema ${options.schema}`,
    async handle(event, ctx) {
      // A type this version does not know names no resource it can map; the event is done for the mirror.
      if ('unknown' in event) return;
      const result = await mirrorEvent(event, ctx, store, options.schema);
      ctx.logger.debug(result, 'mirrored');
    },
    async close() {},
  };
}

/**
 * Registers the Postgres mirror sink on a payhooks instance: migrates its schema and puts its accounts table in step
 * with the instance's accounts ({@link ensureMirrorAccounts}), then mirrors every event (or the given types) into
 * tables of current state, each row under its event's account (docs/mirror.md). Call before `hooks.start()`.
 *
 * @example
 * const hooks = createPayhooks({ secret, api: createClient({ apiKey }) });
 * await registerMirror(hooks);
 * await hooks.start();
 */
export async function registerMirror(hooks: Payhooks<ApiClient>, options: MirrorOptions = {}): Promise<{ schema: string }> {
  const schema = options.schema ?? MIRROR_DEFAULTS.schema;
  const store = await hooks.ready();
  await migrateMirror(store, schema);
  // The mirror's own accounts table, in step with this instance's accounts: its rows refer to it.
  await ensureMirrorAccounts(store.db, schema, hooks.accounts);
  registerSink(hooks, mirrorSink(store, { schema, eventTypes: options.eventTypes }), { store });
  return { schema };
}
