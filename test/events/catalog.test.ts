import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  EDGE_CASE_EVENTS,
  EVENT_TYPES,
  EXAMPLE_EVENTS,
  EventParseError,
  exampleEvent,
  parseEvent,
  parseEventOrThrow,
  resourceKeyOf,
  type EventType,
} from '../../src/events/index.js';
import { PayhooksError } from '../../src/errors.js';
import { RESOURCE_KEYS } from '../../src/events/resource-key.js';

function paths(input: unknown): string[] {
  const result = parseEvent(input);
  if (result.ok) throw new Error('expected the event to be rejected');
  return result.error.issues.map((issue) => issue.path);
}

describe('the catalog', () => {
  it('knows the 19 event types of the spec, each with an example', () => {
    expect(EVENT_TYPES).toHaveLength(19);
    expect(Object.keys(EXAMPLE_EVENTS).sort()).toEqual([...EVENT_TYPES].sort());
  });

  it.each(EVENT_TYPES)('the %s example parses into its typed event', (type) => {
    const result = parseEvent(JSON.parse(JSON.stringify(EXAMPLE_EVENTS[type])));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.event.eventType).toBe(type);
    expect(result.event).not.toHaveProperty('unknown');
    expect(result.event.data).toEqual(EXAMPLE_EVENTS[type].data);
  });

  it.each(EDGE_CASE_EVENTS.map((c) => [c.name, c.event] as const))('edge case: %s', (_name, event) => {
    const result = parseEvent(JSON.parse(JSON.stringify(event)));
    if (!result.ok) throw result.error;
    expect(result.event.data).toEqual(event.data);
  });

  it('keeps unknown fields at every depth', () => {
    const edge = EDGE_CASE_EVENTS.find((c) => c.event.eventId === 'evt_edge_inv_null')!.event;
    const event = parseEventOrThrow(edge);
    expect(event.data).toMatchObject({ futureTopLevel: 'kept', invoice: { newInvoiceField: { nested: true } } });
  });

  it('keeps any extra keys added to any example', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...EVENT_TYPES),
        fc.dictionary(
          fc.string({ minLength: 1 }).filter((k) => !(k in {}) && k !== '__proto__'),
          fc.jsonValue(),
        ),
        (type, extra) => {
          const base = exampleEvent(type);
          const data = { ...extra, ...base.data };
          const result = parseEvent(JSON.parse(JSON.stringify({ ...base, data })));
          if (!result.ok) throw result.error;
          expect(result.event.data).toEqual(JSON.parse(JSON.stringify(data)));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('exampleEvent gives a fresh id and an independent copy', () => {
    const a = exampleEvent('INVOICE_PAID');
    const b = exampleEvent('INVOICE_PAID', { eventId: 'evt_given', data: { amount: 0 } });
    expect(a.eventId).not.toBe(EXAMPLE_EVENTS.INVOICE_PAID.eventId);
    expect(b.eventId).toBe('evt_given');
    expect(b.data.amount).toBe(0);
    a.data.invoice.items.length = 0;
    expect(EXAMPLE_EVENTS.INVOICE_PAID.data.invoice.items.length).toBe(1);
  });
});

describe('wrongly typed fields are rejected with their paths', () => {
  // biome-ignore lint/suspicious/noExplicitAny: each case breaks a different path of a JSON copy on purpose
  const wrong = <K extends EventType>(type: K, change: (data: Record<string, any>) => void) => {
    const event = JSON.parse(JSON.stringify(exampleEvent(type)));
    change(event.data);
    return event;
  };

  it.each([
    ['invoice', wrong('INVOICE_PAID', (d) => (d.amount = '2500')), ['data.amount']],
    ['invoice currency', wrong('INVOICE_CREATED', (d) => (d.invoice.currency = 'usd1')), ['data.invoice.currency']],
    ['invoice id missing', wrong('INVOICE_CANCELED', (d) => delete d.invoiceId), ['data.invoiceId']],
    ['invoice date', wrong('INVOICE_UPDATED', (d) => (d.invoice.dueDate = '30/11/2026')), ['data.invoice.dueDate']],
    ['customer', wrong('CUSTOMER_CREATED', (d) => (d.username = 42)), ['data.username']],
    ['attempt', wrong('PAYMENT_ATTEMPT_FAILED', (d) => (d.paymentAttempt.attemptNumber = 1.5)), ['data.paymentAttempt.attemptNumber']],
    ['payment completed', wrong('PAYMENT_COMPLETED', (d) => (d.items[0].quantity = 'one')), ['data.items.0.quantity']],
    ['payment method', wrong('PAYMENT_METHOD_CREATED', (d) => (d.paymentMethod.confirmed = 'yes')), ['data.paymentMethod.confirmed']],
    ['refund', wrong('PAYMENT_REFUNDED', (d) => (d.refund.amount = null)), ['data.refund.amount']],
    ['dispute', wrong('DISPUTE_RESOLVED', (d) => (d.dispute.createdAt = 'yesterday')), ['data.dispute.createdAt']],
    ['subscription', wrong('SUBSCRIPTION_CREATED', (d) => (d.subscription.isActive = 1)), ['data.subscription.isActive']],
  ])('%s', (_group, event, expected) => {
    expect(paths(event)).toEqual(expected);
  });

  it('lists every failing path at once, in the error message too', () => {
    const event = wrong('PAYMENT_REFUNDED', (d) => {
      d.refund.currency = 'pesos';
      d.payment.amount = 'NaN';
      delete d.organization;
    });
    const result = parseEvent(event);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toBeInstanceOf(EventParseError);
    expect(result.error).toBeInstanceOf(PayhooksError);
    expect(result.error.message).toMatch(/^payhooks: Invalid event: /);
    expect(result.error.issues.map((i) => i.path).sort()).toEqual(['data.organization', 'data.payment.amount', 'data.refund.currency']);
    expect(result.error.message).toMatch(/data\.refund\.currency: must be a three-letter ISO 4217 code/);
  });

  it('refuses lower-case currency codes and non-finite amounts', () => {
    expect(paths(wrong('INVOICE_PAID', (d) => (d.invoice.currency = 'mxn')))).toEqual(['data.invoice.currency']);
    const infinite = exampleEvent('INVOICE_PAID');
    expect(paths({ ...infinite, data: { ...infinite.data, amount: Infinity } })).toEqual(['data.amount']);
  });
});

describe('the envelope', () => {
  it.each([
    [{ eventType: 'INVOICE_PAID', data: {} }, ['eventId']],
    [{ eventId: '', eventType: 'INVOICE_PAID', data: {} }, ['eventId']],
    [{ eventId: 'e', eventType: '  ', data: {} }, ['eventType']],
    [{ eventId: 'e', eventType: 'INVOICE_PAID', data: [] }, ['data']],
    [{ eventId: 'e', eventType: 'INVOICE_PAID', data: null }, ['data']],
    [{ eventId: 'e', eventType: 'INVOICE_PAID', data: 'x' }, ['data']],
    [{ eventId: 7, eventType: 8 }, ['eventId', 'eventType', 'data']],
  ])('%j is rejected at %j', (input, expected) => {
    expect(paths(input)).toEqual(expected);
  });

  it('an unknown event type is an unknown event, not an error', () => {
    const result = parseEvent({ eventId: 'evt_x', eventType: 'INVOICE_EXPLODED', data: { a: 1 } });
    expect(result).toEqual({ ok: true, event: { eventId: 'evt_x', eventType: 'INVOICE_EXPLODED', data: { a: 1 }, unknown: true } });
  });
});

describe('resourceKeyOf', () => {
  it.each([
    ['INVOICE_PAID', EXAMPLE_EVENTS.INVOICE_PAID.data, 'invoice:inv_5Rk9Lm'],
    ['INVOICE_CREATED', { invoice: { id: 'inv_fallback' } }, 'invoice:inv_fallback'],
    ['CUSTOMER_ARCHIVED', EXAMPLE_EVENTS.CUSTOMER_ARCHIVED.data, 'customer:cus_8Jd3kQ'],
    ['PAYMENT_ATTEMPT_FAILED', EXAMPLE_EVENTS.PAYMENT_ATTEMPT_FAILED.data, 'payment:pay_3Hn7Zx'],
    ['PAYMENT_COMPLETED', EXAMPLE_EVENTS.PAYMENT_COMPLETED.data, 'payment:pay_3Hn7Zx'],
    ['PAYMENT_REFUNDED', EXAMPLE_EVENTS.PAYMENT_REFUNDED.data, 'payment:pay_3Hn7Zx'],
    ['PAYMENT_METHOD_CREATED', EXAMPLE_EVENTS.PAYMENT_METHOD_CREATED.data, 'customer:cus_8Jd3kQ'],
    ['DISPUTE_CREATED', EXAMPLE_EVENTS.DISPUTE_CREATED.data, 'dispute:dp_6Vb'],
    ['SUBSCRIPTION_CANCELED', EXAMPLE_EVENTS.SUBSCRIPTION_CANCELED.data, 'subscription:sub_1Mz'],
  ])('%s → %s', (type, data, key) => {
    expect(resourceKeyOf(type, data)).toBe(key);
  });

  it('is null, never throwing, on garbage and unknown types', () => {
    for (const data of [null, undefined, 42, 'x', [], { invoiceId: 7 }, { payment: null }, { payment: { id: '' } }]) {
      for (const type of EVENT_TYPES) expect(resourceKeyOf(type, data)).toBeNull();
    }
    expect(resourceKeyOf('SOMETHING_NEW', { id: 'x' })).toBeNull();
  });

  it('has a key function for every event type of the catalog, and for nothing else', () => {
    expect(Object.keys(RESOURCE_KEYS).sort()).toEqual([...EVENT_TYPES].sort());
    for (const type of EVENT_TYPES) expect(typeof RESOURCE_KEYS[type]).toBe('function');
  });

  it.each([
    ['INVOICE_CREATED', 'invoice:inv_5Rk9Lm'],
    ['INVOICE_UPDATED', 'invoice:inv_5Rk9Lm'],
    ['INVOICE_CANCELED', 'invoice:inv_5Rk9Lm'],
    ['INVOICE_PAID', 'invoice:inv_5Rk9Lm'],
    ['INVOICE_PAID_OTHER', 'invoice:inv_5Rk9Lm'],
    ['CUSTOMER_CREATED', 'customer:cus_8Jd3kQ'],
    ['CUSTOMER_UPDATED', 'customer:cus_8Jd3kQ'],
    ['CUSTOMER_ARCHIVED', 'customer:cus_8Jd3kQ'],
    ['PAYMENT_ATTEMPT_SUCCEEDED', 'payment:pay_3Hn7Zx'],
    ['PAYMENT_ATTEMPT_FAILED', 'payment:pay_3Hn7Zx'],
    ['PAYMENT_COMPLETED', 'payment:pay_3Hn7Zx'],
    ['PAYMENT_METHOD_CREATED', 'customer:cus_8Jd3kQ'],
    ['PAYMENT_REFUNDED', 'payment:pay_3Hn7Zx'],
    ['DISPUTE_CREATED', 'dispute:dp_6Vb'],
    ['DISPUTE_RESPONSE_CREATED', 'dispute:dp_6Vb'],
    ['DISPUTE_RESOLVED', 'dispute:dp_6Vb'],
    ['SUBSCRIPTION_CREATED', 'subscription:sub_1Mz'],
    ['SUBSCRIPTION_UPDATED', 'subscription:sub_1Mz'],
    ['SUBSCRIPTION_CANCELED', 'subscription:sub_1Mz'],
  ] as const)('the %s example is keyed %s', (type, key) => {
    expect(resourceKeyOf(type, EXAMPLE_EVENTS[type].data)).toBe(key);
  });

  it('gives no key to a type outside the catalog, even one that looks like a known family', () => {
    expect(resourceKeyOf('INVOICE_EXPLODED', EXAMPLE_EVENTS.INVOICE_PAID.data)).toBeNull();
    expect(resourceKeyOf('invoice_paid', EXAMPLE_EVENTS.INVOICE_PAID.data)).toBeNull();
    expect(resourceKeyOf('__proto__', {})).toBeNull();
    expect(resourceKeyOf('toString', {})).toBeNull();
  });
});
