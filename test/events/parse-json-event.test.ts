import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EDGE_CASE_EVENTS, EVENT_TYPES, exampleEvent, parseEvent, parseJsonEvent } from '../../src/events/index.js';

/** What a caller can see of a result: the event, or the error's message and issues. */
function seen(result: ReturnType<typeof parseEvent>): unknown {
  return result.ok ? { ok: true, event: result.event } : { ok: false, message: result.error.message, issues: result.error.issues };
}

/** Both functions on the same JSON text, each on a value of its own. */
function both(text: string): [unknown, unknown] {
  return [seen(parseEvent(JSON.parse(text))), seen(parseJsonEvent(JSON.parse(text)))];
}

describe('parseJsonEvent (the worker reads stored bodies with it)', () => {
  it.each(EVENT_TYPES)('gives what parseEvent gives for the %s example', (type) => {
    const [expected, actual] = both(JSON.stringify(exampleEvent(type, { eventId: 'evt_same' })));
    expect(actual).toEqual(expected);
  });

  it.each(EDGE_CASE_EVENTS.map((c) => [c.name, c.event] as const))('gives what parseEvent gives for the edge case %s', (_name, event) => {
    const [expected, actual] = both(JSON.stringify(event));
    expect(actual).toEqual(expected);
  });

  it('gives what parseEvent gives for envelopes that are invalid, or valid only just', () => {
    const base = exampleEvent('INVOICE_PAID', { eventId: 'evt_env' });
    const identifiers = ['', ' evt', 'evt ', 'e\u0000v', 'x'.repeat(255), 'x'.repeat(256), 'evt_ok', 7, null, ['evt'], { id: 1 }];
    const datas = [null, [], [1], 'text', 3, {}, { ...base.data, amount: 'a lot' }, base.data];
    const cases: unknown[] = [null, [], 'text', 5, {}, { eventId: 'evt_x', eventType: 'INVOICE_PAID' }];
    for (const eventId of identifiers) cases.push({ ...base, eventId });
    for (const eventType of identifiers) cases.push({ ...base, eventType }, { ...base, eventType, data: {} });
    for (const data of datas) cases.push({ ...base, data }, { ...base, eventType: 'SOMETHING_NEW', data });
    for (const input of cases) {
      const [expected, actual] = both(JSON.stringify(input));
      expect(actual, JSON.stringify(input).slice(0, 200)).toEqual(expected);
    }
  });

  it('leaves an own __proto__ key to the envelope schema, at the top and in data', () => {
    for (const text of [
      '{"__proto__":{"eventId":"evt_p"},"eventId":"evt_p","eventType":"SOMETHING_NEW","data":{}}',
      '{"eventId":"evt_p","eventType":"SOMETHING_NEW","data":{"__proto__":{"polluted":true},"a":1}}',
      '{"eventId":"evt_p","eventType":"INVOICE_PAID","data":{"__proto__":{"polluted":true}}}',
    ]) {
      const [expected, actual] = both(text);
      expect(actual).toEqual(expected);
    }
  });

  it('gives what parseEvent gives for any JSON value put at any field of an example', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...EVENT_TYPES),
        fc.constantFrom('eventId', 'eventType', 'data', 'extra'),
        fc.jsonValue(),
        (type, field, value) => {
          const [expected, actual] = both(JSON.stringify({ ...exampleEvent(type, { eventId: 'evt_fc' }), [field]: value }));
          expect(actual).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('hands out a copy of an unknown type data, not the value it was given', () => {
    const json = { eventId: 'evt_copy', eventType: 'SOMETHING_NEW', data: { a: 1 } };
    const result = parseJsonEvent(json);
    expect(result.ok && result.event.data).toEqual({ a: 1 });
    expect(result.ok && result.event.data).not.toBe(json.data);
  });
});
