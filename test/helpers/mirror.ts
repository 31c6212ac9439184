import { sql } from 'kysely';
import type { SimulatorRecords } from '../../src/simulator/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';

// Puts the simulator's records and the mirror's rows in one comparable shape (ISO times, numbers as numbers),
// so that a test can say "the mirror equals the simulator" row by row.

const iso = (value: unknown): string | null => (value === null || value === undefined ? null : new Date(value as string).toISOString());
const num = (value: unknown): number => Number(value);
const byId = <T extends { id: string }>(rows: T[]): T[] => [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

/** The comparable view of the simulator's state. */
export function expectedMirror(records: SimulatorRecords) {
  return {
    customers: byId(
      records.customers.map((c) => ({
        id: c.id,
        username: c.username,
        name: c.name,
        email: c.email,
        phone_number: c.phoneNumber,
        archived_at: iso(c.archivedAt),
        created_at: iso(c.createdAt),
        updated_at: iso(c.updatedAt),
      })),
    ),
    invoices: byId(
      records.invoices.map((i) => ({
        id: i.id,
        customer_id: i.customerId,
        status: i.canceledAt ? 'canceled' : i.isPaid ? 'paid' : 'open',
        amount: i.amount,
        currency: i.currency,
        is_paid: i.isPaid,
        paid_at: iso(i.paidAt),
        due_date: iso(i.dueDate),
        items: i.items.map((item) => ({
          amount: item.amount,
          quantity: item.quantity,
          currency: item.currency,
          concept_id: item.conceptId,
        })),
      })),
    ),
    payments: byId(
      records.payments.map((p) => ({
        id: p.id,
        invoice_id: p.invoiceId,
        amount: p.amount,
        type: p.type,
        status: p.status,
        is_completed: p.isCompleted,
        payment_time: iso(p.paymentTime),
      })),
    ),
    refunds: byId(records.refunds.map((r) => ({ id: r.id, payment_id: r.paymentId, amount: r.amount, status: r.status }))),
    disputes: byId(
      records.disputes.map((d) => ({
        id: d.id,
        payment_id: d.paymentId,
        status: d.status,
        response_id: d.response?.id ?? null,
        resolved_at: iso(d.resolvedAt),
        lost_reason: d.lostReason,
      })),
    ),
    subscriptions: byId(
      records.subscriptions.map((s) => ({
        id: s.id,
        customer_id: s.customerId,
        status: s.status,
        is_active: s.isActive,
        is_completed: s.isCompleted,
        last_collection_date: iso(s.lastCollectionDate),
        next_collection_date: iso(s.nextCollectionDate),
      })),
    ),
  };
}

type Row = Record<string, unknown>;

async function rowsOf(store: PayhooksDatabase, schema: string, table: string, account?: string): Promise<Row[]> {
  const { rows } = await sql<Row>`select * from ${sql.id(schema, table)}
    where ${account === undefined ? sql`true` : sql`account = ${account}`} order by id`.execute(store.db.withoutPlugins());
  return rows;
}

/** The mirror's rows (of one account, or all) in the same shape as {@link expectedMirror}. */
export async function actualMirror(store: PayhooksDatabase, schema: string, account?: string) {
  const items = await sql<Row>`select * from ${sql.id(schema, 'invoice_items')}
    where ${account === undefined ? sql`true` : sql`account = ${account}`} order by invoice_id, position`.execute(store.db.withoutPlugins());
  const itemsOf = (invoiceId: unknown) =>
    items.rows
      .filter((item) => item.invoice_id === invoiceId)
      .map((item) => ({ amount: num(item.amount), quantity: num(item.quantity), currency: item.currency, concept_id: item.concept_id }));
  return {
    customers: byId(
      (await rowsOf(store, schema, 'customers', account)).map((c) => ({
        id: c.id as string,
        username: c.username,
        name: c.name,
        email: c.email,
        phone_number: c.phone_number,
        archived_at: iso(c.archived_at),
        created_at: iso(c.created_at),
        updated_at: iso(c.updated_at),
      })),
    ),
    invoices: byId(
      (await rowsOf(store, schema, 'invoices', account)).map((i) => ({
        id: i.id as string,
        customer_id: i.customer_id,
        status: i.status,
        amount: num(i.amount),
        currency: i.currency,
        is_paid: i.is_paid,
        paid_at: iso(i.paid_at),
        due_date: iso(i.due_date),
        items: itemsOf(i.id),
      })),
    ),
    payments: byId(
      (await rowsOf(store, schema, 'payments', account)).map((p) => ({
        id: p.id as string,
        invoice_id: p.invoice_id,
        amount: num(p.amount),
        type: p.type,
        status: p.status,
        is_completed: p.is_completed,
        payment_time: iso(p.payment_time),
      })),
    ),
    refunds: byId(
      (await rowsOf(store, schema, 'refunds', account)).map((r) => ({
        id: r.id as string,
        payment_id: r.payment_id,
        amount: num(r.amount),
        status: r.status,
      })),
    ),
    disputes: byId(
      (await rowsOf(store, schema, 'disputes', account)).map((d) => ({
        id: d.id as string,
        payment_id: d.payment_id,
        status: d.status,
        response_id: d.response_id,
        resolved_at: iso(d.resolved_at),
        lost_reason: d.lost_reason,
      })),
    ),
    subscriptions: byId(
      (await rowsOf(store, schema, 'subscriptions', account)).map((s) => ({
        id: s.id as string,
        customer_id: s.customer_id,
        status: s.status,
        is_active: s.is_active,
        is_completed: s.is_completed,
        last_collection_date: iso(s.last_collection_date),
        next_collection_date: iso(s.next_collection_date),
      })),
    ),
  };
}

/** Drops a test's mirror schema (real server only; PGlite in memory vanishes on close). */
export async function dropMirrorSchema(store: PayhooksDatabase, schema: string): Promise<void> {
  if (store.kind === 'postgres') await sql.raw(`drop schema if exists "${schema}" cascade`).execute(store.db);
}
