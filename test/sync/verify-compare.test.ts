import { describe, expect, it } from 'vitest';
import type { ApiCustomer, ApiInvoice, ApiPayment } from '../../src/events/rest-contract.js';
import { customerFromApi, invoiceFromApi, paymentFromApi } from '../../src/sync/mirror/states.js';
import { diffRow, isStale, missingDiff } from '../../src/sync/verify/compare-row.js';

const readAt = new Date('2026-11-25T12:00:00Z');
const customer = {
  id: 'cus_1',
  username: 'ada',
  name: 'Ada',
  email: 'ada@example.com',
  phoneNumber: null,
  meta: { tier: 'gold', region: 'mx' },
  createdAt: '2026-11-01T10:00:00Z',
  updatedAt: '2026-11-02T10:00:00.000Z',
  archivedAt: null,
} as unknown as ApiCustomer;

/** The row the mirror holds for `customer`, as the driver returns it (times as Dates, jsonb as an object). */
const customerRow = (changes: Record<string, unknown> = {}) => ({
  id: 'cus_1',
  username: 'ada',
  name: 'Ada',
  email: 'ada@example.com',
  phone_number: null,
  archived: false,
  archived_at: null,
  created_at: new Date('2026-11-01T10:00:00Z'),
  updated_at: new Date('2026-11-02T10:00:00Z'),
  meta: { region: 'mx', tier: 'gold' },
  source: 'api',
  ...changes,
});

describe('diffRow', () => {
  it('finds nothing when the row holds what the API says, whatever form the driver gives times and jsonb in', () => {
    expect(diffRow(customerFromApi(customer, readAt), customerRow())).toEqual([]);
  });

  it('names each differing field with both values', () => {
    const diff = diffRow(customerFromApi(customer, readAt), customerRow({ email: 'old@example.com', meta: { tier: 'silver' } }));
    expect(diff).toEqual([
      { field: 'email', mirror: 'old@example.com', api: 'ada@example.com' },
      { field: 'meta', mirror: { tier: 'silver' }, api: { region: 'mx', tier: 'gold' } },
    ]);
  });

  it("a row from an event's snapshot is not blamed for the columns events do not carry; a row from the API is", () => {
    const bare = { created_at: null, updated_at: null };
    expect(diffRow(customerFromApi(customer, readAt), customerRow({ ...bare, source: 'event' }))).toEqual([]);
    expect(diffRow(customerFromApi(customer, readAt), customerRow(bare)).map((d) => d.field)).toEqual(['created_at', 'updated_at']);
  });

  it('compares invoice items in their order, numbers as numbers (numeric columns come back as text)', () => {
    const invoice = {
      id: 'inv_1',
      amount: 300,
      currency: 'MXN',
      dueDate: '2026-12-01T06:00:00Z',
      expireDate: null,
      customerId: 'cus_1',
      description: null,
      collectionMethod: 'AUTOMATIC',
      isPaid: false,
      paidAt: null,
      canceledAt: null,
      createdAt: '2026-11-01T10:00:00Z',
      meta: {},
      items: [
        { description: 'a', amount: 100, currency: 'MXN', quantity: 1, conceptId: 'con_a' },
        { description: 'b', amount: 200, currency: 'MXN', quantity: 1, conceptId: 'con_b' },
      ],
    } as unknown as ApiInvoice;
    const row = {
      customer_id: 'cus_1',
      status: 'open',
      amount: '300',
      currency: 'MXN',
      description: null,
      due_date: new Date('2026-12-01T06:00:00Z'),
      expire_date: null,
      collection_method: 'AUTOMATIC',
      is_paid: false,
      paid_at: null,
      canceled_at: null,
      created_at: new Date('2026-11-01T10:00:00Z'),
      meta: {},
      source: 'api',
      items: [
        { position: 1, description: 'b', amount: '200', currency: 'MXN', quantity: '1', concept_id: 'con_b' },
        { position: 0, description: 'a', amount: '100', currency: 'MXN', quantity: '1', concept_id: 'con_a' },
      ],
    };
    const state = invoiceFromApi(invoice, readAt);
    expect(diffRow(state, row)).toEqual([]);
    const oneItem = diffRow(state, { ...row, items: row.items.slice(1) });
    expect(oneItem.map((d) => d.field)).toEqual(['items']);
    expect(missingDiff(state).map((d) => d.field)).toContain('amount');
  });

  it("a payment's links the API does not carry are compared only when it gives them", () => {
    const payment = { id: 'pay_1', amount: 100, currency: 'MXN', invoiceId: null, createdAt: null } as unknown as ApiPayment;
    const state = paymentFromApi(payment, { invoiceId: null, customerId: null }, readAt);
    const row = {
      invoice_id: 'inv_1',
      customer_id: 'cus_1',
      amount: '100',
      currency: 'MXN',
      type: null,
      status: null,
      is_completed: null,
      payment_time: null,
      authorization_code: null,
      created_at: null,
      meta: {},
      source: 'api',
    };
    expect(diffRow(state, row)).toEqual([]);
  });
});

describe('isStale', () => {
  const expected = customerFromApi(customer, readAt);
  const changedAt = new Date('2026-11-02T10:00:00Z');

  it('is stale when the row was written before the record last changed', () => {
    expect(isStale(expected, changedAt, customerRow({ name: 'Old', synced_at: new Date('2026-11-02T09:00:00Z') }))).toBe(true);
  });

  it('is stale when the row holds an older version by its own times, however recently it was written', () => {
    const back = customerRow({ name: 'Old', updated_at: new Date('2026-11-01T12:00:00Z'), synced_at: readAt });
    expect(isStale(expected, changedAt, back)).toBe(true);
  });

  it('is different when the row holds the same version and was written after the change', () => {
    expect(isStale(expected, changedAt, customerRow({ name: 'Edited', synced_at: readAt }))).toBe(false);
  });

  it("judges a row from an event's snapshot only on the times events carry", () => {
    // Events carry no customer times: a snapshot row has none to hold against the API's.
    const snapshot = customerRow({ source: 'event', updated_at: null, created_at: null, synced_at: readAt });
    expect(isStale(expected, changedAt, snapshot)).toBe(false);
  });
});
