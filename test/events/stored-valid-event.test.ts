import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { EDGE_CASE_EVENTS, EVENT_DATA_SCHEMAS, EVENT_TYPES, exampleEvent, parseJsonEvent } from '../../src/events/index.js';
import { dataCheckFingerprint, receivedEnvelope, schemasFingerprint, storedValidEvent } from '../../src/events/parse-event.js';

/** Whether the receiver marks a parsed body as certainly valid (read-delivery.ts stores the mark). */
const certainlyValidEvent = (json: unknown): boolean => receivedEnvelope(json)?.dataValidUnder === dataCheckFingerprint();

/** Every catalog example and edge case, and one of a type outside the catalog, as the JSON text a receiver stores. */
const BODIES: [string, string][] = [
  ...EVENT_TYPES.map((type) => [type, JSON.stringify(exampleEvent(type, { eventId: `evt_${type}` }))] as [string, string]),
  ...EDGE_CASE_EVENTS.map((c) => [c.name, JSON.stringify(c.event)] as [string, string]),
  ['a type outside the catalog', JSON.stringify({ eventId: 'evt_new', eventType: 'SOMETHING_NEW', data: { a: [1, { b: 'c' }] } })],
];

describe('the data check at receipt (the worker trusts it and parses the body only when a handler reads data)', () => {
  it.each(BODIES)('%s: a certainly valid body reads as parseJsonEvent reads it', (_name, body) => {
    const json = JSON.parse(body) as { eventId: string; eventType: string };
    const full = parseJsonEvent(JSON.parse(body));
    expect(certainlyValidEvent(json)).toBe(full.ok);
    if (!full.ok) return;
    const lazy = storedValidEvent(json.eventId, json.eventType, body);
    expect(lazy).toEqual(full.event);
    expect(Object.keys(lazy)).toEqual(Object.keys(full.event));
  });

  it('is not certain of data that fails its schema, of a broken envelope, or of what is not an object', () => {
    const paid = exampleEvent('INVOICE_PAID', { eventId: 'evt_bad' });
    for (const value of [
      { ...paid, data: { ...paid.data, amount: 'a lot' } },
      { ...paid, eventId: ' evt' },
      { ...paid, data: [] },
      { eventId: 'evt_x', eventType: 'INVOICE_PAID' },
      JSON.parse('{"eventId":"evt_p","eventType":"SOMETHING_NEW","data":{"__proto__":{"polluted":true}}}'),
      null,
      'text',
    ])
      expect(certainlyValidEvent(value), JSON.stringify(value)).toBe(false);
  });

  it('reads the body only when data is first read: an event whose data nobody reads never parses it', () => {
    const event = storedValidEvent('evt_lazy', 'INVOICE_PAID', 'not json at all');
    expect([event.eventId, event.eventType]).toEqual(['evt_lazy', 'INVOICE_PAID']);
    expect(() => event.data).toThrow(SyntaxError);
    const body = JSON.stringify(exampleEvent('INVOICE_PAID', { eventId: 'evt_once' }));
    const once = storedValidEvent('evt_once', 'INVOICE_PAID', body);
    expect(once.data).toBe(once.data);
  });

  it('fingerprints the schemas: the same outline gives the same print, a changed check or a new type another', () => {
    const print = dataCheckFingerprint();
    expect(print).toMatch(/^[0-9a-f]{32}$/);
    expect(schemasFingerprint({ ...EVENT_DATA_SCHEMAS })).toBe(print);
    const tighter = { ...EVENT_DATA_SCHEMAS, INVOICE_PAID: EVENT_DATA_SCHEMAS.INVOICE_PAID.extend({ invoiceId: z.string().min(40) }) };
    expect(schemasFingerprint(tighter)).not.toBe(print);
    expect(schemasFingerprint({ ...EVENT_DATA_SCHEMAS, SOMETHING_NEW: z.looseObject({}) })).not.toBe(print);
    const pattern = {
      ...EVENT_DATA_SCHEMAS,
      INVOICE_PAID: EVENT_DATA_SCHEMAS.INVOICE_PAID.extend({ invoiceId: z.string().regex(/^inv_/) }),
    };
    const otherPattern = {
      ...EVENT_DATA_SCHEMAS,
      INVOICE_PAID: EVENT_DATA_SCHEMAS.INVOICE_PAID.extend({ invoiceId: z.string().regex(/^in_/) }),
    };
    expect(schemasFingerprint(pattern)).not.toBe(schemasFingerprint(otherPattern));
  });
});
