// Handler templates for direct debit (README.md): import them as `payhooks/handlers/direct-debit`, or copy this
// folder into your app and change what you need. Each concern is one module and one handler; each writes its
// tables in the transaction that records its completion, so each write happens once; the one call out, the
// dunning hook, is an effect step (ctx.effect) before that transaction, so it too happens at most once.
import { fileURLToPath } from 'node:url';
import type { Transaction } from 'kysely';
import { type HandlerContext, migrateApp, type Payhooks, readMigrations } from 'payhooks';
import { type ApiClient, NotFoundError } from 'payhooks/client';
import { collectedInvoices, recordCollection } from './collections.js';
import { recordDispute, recordRefund } from './disputes.js';
import { type DunningHook, pendingFailure, recordFailure } from './failures.js';
import { recordMandate, revokeMandates } from './mandates.js';
import { recordSubscription } from './subscriptions.js';
import type { DirectDebitDb, DirectDebitTables } from './tables.js';

export { type ChargeItem, chargeMismatch, type ExpectedCharge, expectCharge } from './collections.js';
export { type DunningHook, type DunningPolicy, dunningDecision, type PaymentFailure } from './failures.js';
export type { DirectDebitDb, DirectDebitTables } from './tables.js';

/** The numbered SQL files of the templates' tables (applied by {@link registerDirectDebit}). */
export const DIRECT_DEBIT_MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/** The defaults of {@link registerDirectDebit}. */
export const DIRECT_DEBIT_DEFAULTS = {
  /** The Postgres schema of the templates' tables, apart from the app's and payhooks' own. */
  schema: 'direct_debit',
  /** Handler names are `direct-debit:<concern>`. */
  handlerPrefix: 'direct-debit',
} as const;

/** Options of {@link registerDirectDebit}. */
export interface DirectDebitOptions {
  /** Default `direct_debit`. */
  schema?: string | undefined;
  /**
   * Called at most once per failed collection attempt (retry schedule, notify the customer, suspend after N), as the
   * effect step `dunning` of the failures handler, before the failure is recorded.
   */
  dunning?: DunningHook | undefined;
  /**
   * Whether the dunning hook may simply be called again when a crash left its outcome unknown: true when whatever it
   * calls applies a repeat once (keyed by `failure.attemptId`, say). Default: as `ctx.effect` decides, idempotent
   * once the hook writes through `ctx.api` (which sends the step's key); otherwise the event is held as
   * `needs-review` for an operator (`payhooks effects resolve EVENT dunning --done|--redo`).
   */
  dunningIdempotent?: boolean | undefined;
  /**
   * Record a collection nobody expected (no {@link expectCharge}) as `paid`. Default false: it is recorded as
   * `unexpected`, for a person to look at, as money the app cannot match to anything it issued.
   */
  acceptUnexpected?: boolean | undefined;
}

type Ctx = HandlerContext<ApiClient>;

/**
 * Migrates the templates' schema and registers their handlers on a payhooks instance: mandates, collections,
 * failures and dunning, subscriptions, disputes and refunds. Call before `hooks.start()`.
 *
 * @example
 * await registerDirectDebit(hooks, {
 *   dunning: async (failure) => {
 *     const next = dunningDecision(failure);
 *     if (next.action === 'suspend') await suspend(failure.customerId);
 *     else await scheduleRetry(failure.paymentId, next.retryAt);
 *   },
 * });
 */
export async function registerDirectDebit(hooks: Payhooks<ApiClient>, options: DirectDebitOptions = {}): Promise<{ schema: string }> {
  const schema = options.schema ?? DIRECT_DEBIT_DEFAULTS.schema;
  const store = await hooks.ready();
  await migrateApp(store, readMigrations(DIRECT_DEBIT_MIGRATIONS_DIR), { appSchema: schema });
  const name = (concern: string) => ({ name: `${DIRECT_DEBIT_DEFAULTS.handlerPrefix}:${concern}` });
  /** Runs `work` on the templates' tables, in the transaction that marks the handler complete. */
  const write = <T>(ctx: Ctx, work: (db: DirectDebitDb) => Promise<T>) =>
    ctx.transaction<DirectDebitTables, T>((trx: Transaction<DirectDebitTables>) => work(trx.withSchema(schema)));
  /** The templates' tables outside any transaction, for a handler's reads before its effect steps. */
  const reader = async (): Promise<DirectDebitDb> => (await hooks.appDb<DirectDebitTables>()).withSchema(schema);

  hooks.on(
    ['PAYMENT_METHOD_CREATED', 'CUSTOMER_ARCHIVED'],
    async (event, ctx) => {
      if (event.eventType === 'CUSTOMER_ARCHIVED') {
        const revoked = await write(ctx, (db) => revokeMandates(db, event.data.id));
        ctx.logger.info({ revoked }, 'customer archived: mandates revoked');
        return;
      }
      // A method saved just before its customer was archived arrives revoked, whatever the order of the two events.
      const archived = ctx.api ? await customerArchived(ctx, event.data.customer.id) : false;
      await write(ctx, (db) => recordMandate(db, event, archived));
    },
    name('mandates'),
  );

  hooks.on(
    ['INVOICE_PAID', 'PAYMENT_COMPLETED'],
    async (event, ctx) => {
      const invoices = await collectedInvoices(event, ctx);
      const statuses = await write(ctx, async (db) => {
        const written: { invoiceId: string; status: string | null }[] = [];
        for (const invoice of invoices) {
          written.push({
            invoiceId: invoice.invoiceId,
            status: await recordCollection(db, invoice, event.eventId, options.acceptUnexpected === true),
          });
        }
        return written;
      });
      for (const { invoiceId, status } of statuses) {
        if (status === 'mismatch')
          ctx.logger.warn({ invoiceId }, 'collected amount, currency or items differ from what was expected: not counted as paid');
        else if (status === 'unexpected')
          ctx.logger.warn({ invoiceId }, 'collected an invoice nobody expected (no expectCharge): recorded as unexpected');
      }
    },
    name('collections'),
  );

  hooks.on(
    'PAYMENT_ATTEMPT_FAILED',
    async (event, ctx) => {
      const invoiceId = ctx.api ? ((await ctx.api.payments.get(event.data.payment.id, { signal: ctx.signal })).invoiceId ?? null) : null;
      // Read, call out, then record: the hook cannot run inside ctx.transaction (its step's record would wait for the
      // transaction: for ever on PGlite's one connection), and a hook that completed is a step that is not called
      // again when the record below fails or the process dies before it.
      const failure = await pendingFailure(await reader(), event, invoiceId);
      if (!failure) return;
      const dunning = options.dunning;
      if (dunning) await ctx.effect('dunning', () => dunning(failure, ctx), { idempotent: options.dunningIdempotent });
      if (await write(ctx, (db) => recordFailure(db, failure, dunning !== undefined)))
        ctx.logger.info({ attemptNumber: failure.attemptNumber, errorType: failure.errorType }, 'payment attempt failed: recorded');
    },
    name('failures'),
  );

  hooks.on(
    ['SUBSCRIPTION_CREATED', 'SUBSCRIPTION_UPDATED', 'SUBSCRIPTION_CANCELED'],
    (event, ctx) => write(ctx, (db) => recordSubscription(db, event)),
    name('subscriptions'),
  );
  hooks.on(
    ['DISPUTE_CREATED', 'DISPUTE_RESPONSE_CREATED', 'DISPUTE_RESOLVED'],
    (event, ctx) => write(ctx, (db) => recordDispute(db, event)),
    name('disputes'),
  );
  hooks.on('PAYMENT_REFUNDED', (event, ctx) => write(ctx, (db) => recordRefund(db, event)), name('refunds'));
  return { schema };
}

async function customerArchived(ctx: Ctx, customerId: string): Promise<boolean> {
  try {
    return Boolean((await ctx.api!.customers.get(customerId, { signal: ctx.signal })).archivedAt);
  } catch (err) {
    if (err instanceof NotFoundError) return false;
    throw err;
  }
}
