import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleEvent } from '../../src/events/index.js';
import type { PayhooksDatabase } from '../../src/store/database.js';
import { migrateMirror } from '../../src/store/migrate.js';
import { mirrorTargets } from '../../src/sync/mirror/event-targets.js';
import {
  disputeFromEvent,
  invoiceFromApi,
  invoiceFromEvent,
  type MirrorState,
  paymentFromApi,
  paymentFromEvent,
  STATE_RANK,
  subscriptionFromEvent,
} from '../../src/sync/mirror/states.js';
import { writeMirrorState } from '../../src/sync/mirror/write.js';
import { dropMirrorSchema } from '../helpers/mirror.js';
import { backends, dispose } from '../helpers/stores.js';

const cause = (eventId: string, eventType = 'TEST') => ({ eventId, eventType });

describe.each(backends.filter((b) => b.available))('guarded upserts into the mirror ($name)', (backend) => {
  let store: PayhooksDatabase;
  let schema: string;
  beforeAll(async () => {
    store = await backend.open();
    schema = `${store.schema}_mirror`;
    await migrateMirror(store, schema);
  });
  afterAll(async () => {
    await dropMirrorSchema(store, schema);
    await dispose(store);
  });

  const db = () => store.db.withoutPlugins();
  async function row(table: string, id: string): Promise<Record<string, unknown> | undefined> {
    const { rows } = await sql<Record<string, unknown>>`select * from ${sql.id(schema, table)} where id = ${id}`.execute(db());
    return rows[0];
  }

  it('an older dispute event arriving after a newer one does not overwrite the row', async () => {
    const base = exampleEvent('DISPUTE_CREATED').data;
    const links = { paymentId: base.payment.id, customerId: base.customer.id };
    const opened = disputeFromEvent(
      { ...base.dispute, id: 'dsp_order', status: 'NEEDS_RESPONSE', createdAt: '2026-11-01T10:00:00.000Z', resolvedAt: null },
      null,
      links,
      STATE_RANK.created,
    );
    const resolved = disputeFromEvent(
      { ...base.dispute, id: 'dsp_order', status: 'WON', createdAt: '2026-11-01T10:00:00.000Z', resolvedAt: '2026-11-09T10:00:00.000Z' },
      { id: 'dre_1', createdAt: '2026-11-03T10:00:00.000Z' },
      links,
      STATE_RANK.final,
    );
    expect(await writeMirrorState(db(), schema, 'default', resolved, cause('evt_resolved'))).toBe(true);
    expect(await writeMirrorState(db(), schema, 'default', opened, cause('evt_opened'))).toBe(false);
    expect(await row('disputes', 'dsp_order')).toMatchObject({
      status: 'WON',
      response_id: 'dre_1',
      last_event_id: 'evt_resolved',
      source: 'event',
    });
  });

  it('snapshots without a time of their own order by their step: a late INVOICE_CREATED does not reopen a paid invoice', async () => {
    const data = exampleEvent('INVOICE_PAID').data;
    const invoice = { ...data.invoice, id: 'inv_steps' };
    const paid = invoiceFromEvent(invoice, { customerId: 'cus_1', description: null, status: 'paid' }, STATE_RANK.final);
    const created = invoiceFromEvent(invoice, { customerId: 'cus_1', description: null, status: 'open' }, STATE_RANK.created);
    await writeMirrorState(db(), schema, 'default', paid, cause('evt_paid'));
    expect(await writeMirrorState(db(), schema, 'default', created, cause('evt_created'))).toBe(false);
    expect(await row('invoices', 'inv_steps')).toMatchObject({ status: 'paid', is_paid: true, last_event_id: 'evt_paid' });
  });

  it('equal versions resolve the same way whatever order they arrive in', async () => {
    const sub = exampleEvent('SUBSCRIPTION_UPDATED').data.subscription;
    const make = (description: string) =>
      subscriptionFromEvent(
        { ...sub, id: 'sub_tie', description, lastCollectionDate: '2026-11-01T00:00:00.000Z' },
        'cus_1',
        STATE_RANK.changed,
      );
    // Same resource, time and step, different content: A then B, then (from scratch) B then A.
    const outcome = async (first: string, second: string) => {
      await sql`delete from ${sql.id(schema, 'subscriptions')} where id = 'sub_tie'`.execute(db());
      await writeMirrorState(db(), schema, 'default', make(first), cause(`evt_${first}`));
      await writeMirrorState(db(), schema, 'default', make(second), cause(`evt_${second}`));
      return (await row('subscriptions', 'sub_tie'))!.description;
    };
    const ab = await outcome('A', 'B');
    expect(await outcome('B', 'A')).toBe(ab);
    expect(await outcome('A', 'B')).toBe(ab);
  });

  it('a read of current state beats any snapshot, and an earlier read arriving late does not overwrite a later one', async () => {
    const apiInvoice = {
      ...exampleEvent('INVOICE_CREATED').data.invoice,
      id: 'inv_reads',
      customerId: 'cus_r',
      isPaid: false,
      paidAt: null,
      canceledAt: null,
    };
    const early = invoiceFromApi(apiInvoice, new Date('2026-11-10T10:00:00.000Z'));
    const late = invoiceFromApi({ ...apiInvoice, isPaid: true, paidAt: '2026-11-10T10:00:05.000Z' }, new Date('2026-11-10T10:00:06.000Z'));
    await writeMirrorState(db(), schema, 'default', late, cause('evt_late'));
    expect(await writeMirrorState(db(), schema, 'default', early, cause('evt_early'))).toBe(false);
    const snapshot = invoiceFromEvent(apiInvoice, { customerId: 'cus_r', description: null, status: 'canceled' }, STATE_RANK.final);
    expect(await writeMirrorState(db(), schema, 'default', snapshot, cause('evt_snapshot'))).toBe(false);
    expect(await row('invoices', 'inv_reads')).toMatchObject({ status: 'paid', source: 'api', last_event_id: 'evt_late' });
  });

  it("replaces an invoice's items with the row, and keeps links a later source does not know", async () => {
    const invoice = { ...exampleEvent('INVOICE_CREATED').data.invoice, id: 'inv_items', isPaid: false };
    const two = invoiceFromApi(
      { ...invoice, items: [invoice.items[0]!, { ...invoice.items[0]!, quantity: 7 }] },
      new Date('2026-11-10T00:00:00Z'),
    );
    const one = invoiceFromApi({ ...invoice, items: [{ ...invoice.items[0]!, quantity: 3 }] }, new Date('2026-11-11T00:00:00Z'));
    await writeMirrorState(db(), schema, 'default', two, null);
    await writeMirrorState(db(), schema, 'default', one, null);
    const { rows } = await sql<{
      quantity: string;
    }>`select quantity from ${sql.id(schema, 'invoice_items')} where invoice_id = 'inv_items'`.execute(db());
    expect(rows.map((r) => Number(r.quantity))).toEqual([3]);

    const payment = exampleEvent('PAYMENT_COMPLETED').data.payment;
    await writeMirrorState(
      db(),
      schema,
      'default',
      paymentFromEvent({ ...payment, id: 'pay_links' }, { invoiceId: 'inv_items', customerId: 'cus_l' }, STATE_RANK.changed),
      null,
    );
    await writeMirrorState(
      db(),
      schema,
      'default',
      paymentFromApi({ ...payment, id: 'pay_links' }, { invoiceId: null, customerId: null }, new Date()),
      null,
    );
    expect(await row('payments', 'pay_links')).toMatchObject({ invoice_id: 'inv_items', customer_id: 'cus_l', source: 'api' });
  });

  it('maps every event type of the catalog to at least one resource, with reads only where the API has them', () => {
    const types = [
      'INVOICE_CREATED',
      'INVOICE_UPDATED',
      'INVOICE_CANCELED',
      'INVOICE_PAID',
      'INVOICE_PAID_OTHER',
      'CUSTOMER_CREATED',
      'CUSTOMER_UPDATED',
      'CUSTOMER_ARCHIVED',
      'PAYMENT_ATTEMPT_SUCCEEDED',
      'PAYMENT_ATTEMPT_FAILED',
      'PAYMENT_COMPLETED',
      'PAYMENT_METHOD_CREATED',
      'PAYMENT_REFUNDED',
      'DISPUTE_CREATED',
      'DISPUTE_RESPONSE_CREATED',
      'DISPUTE_RESOLVED',
      'SUBSCRIPTION_CREATED',
      'SUBSCRIPTION_UPDATED',
      'SUBSCRIPTION_CANCELED',
    ] as const;
    for (const type of types) {
      const targets = mirrorTargets(exampleEvent(type));
      expect(targets.length, type).toBeGreaterThan(0);
      for (const target of targets) {
        const table = target.kind === 'read' ? target.table : target.state.table;
        if (target.kind === 'read') expect(['customers', 'invoices', 'payments']).toContain(table);
      }
    }
  });

  it('a state whose write fails leaves the stored row as it was (one statement)', async () => {
    const ok: MirrorState = invoiceFromEvent(
      { ...exampleEvent('INVOICE_CREATED').data.invoice, id: 'inv_intact' },
      { customerId: null, description: 'kept', status: 'open' },
      STATE_RANK.created,
    );
    await writeMirrorState(db(), schema, 'default', ok, null);
    const broken: MirrorState = { ...ok, rank: STATE_RANK.final, columns: { ...ok.columns, due_date: 'not a date' } };
    await expect(writeMirrorState(db(), schema, 'default', broken, null)).rejects.toThrow();
    expect(await row('invoices', 'inv_intact')).toMatchObject({ description: 'kept', status: 'open' });
  });
});
