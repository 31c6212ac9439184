import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { PayhooksError } from '../../src/errors.js';
import { EVENT_TYPES } from '../../src/events/index.js';
import { editDistance } from '../../src/internal/edit-distance.js';
import { createPayhooks } from '../../src/payhooks.js';
import { HandlerRegistry, type AnyEventHandler } from '../../src/worker/handlers.js';
import { UnknownEventTypeError, closestEventTypes } from '../../src/worker/unknown-event-type.js';

const noop = () => undefined;

describe('editDistance', () => {
  it.each([
    ['', '', 0],
    ['abc', '', 3],
    ['', 'abc', 3],
    ['INVOICE_PAID', 'INVOICE_PAID', 0],
    ['INVOICE_PAYED', 'INVOICE_PAID', 2],
    ['INVOICE_PIAD', 'INVOICE_PAID', 1],
    ['kitten', 'sitting', 3],
    ['CUSTOMER_DELETED', 'CUSTOMER_CREATED', 4],
  ])('%j → %j is %i', (a, b, expected) => {
    expect(editDistance(a, b)).toBe(expected);
    expect(editDistance(b, a)).toBe(expected);
  });
});

describe('closestEventTypes', () => {
  it.each([
    ['INVOICE_PAYED', ['INVOICE_PAID']],
    ['invoice.paid', ['INVOICE_PAID']],
    ['Invoice-Paid', ['INVOICE_PAID']],
    ['INVOICE_CANCELLED', ['INVOICE_CANCELED']],
    ['SUBSCRIPTION_CANCELLED', ['SUBSCRIPTION_CANCELED']],
    ['PAYMENT_REFUND', ['PAYMENT_REFUNDED']],
    ['CUSTOMER_DELETED', []],
    ['PAYMENT_SUCCEEDED', []],
    ['PAID', []],
    ['', []],
  ] as const)('%j → %j', (typo, expected) => {
    expect(closestEventTypes(typo)).toEqual(expected);
  });
});

describe('on() refuses event types outside the catalog', () => {
  // Plain-JavaScript handler modules reach on() with any string; these casts stand for them.
  const untyped = (registry: HandlerRegistry) =>
    registry.on as unknown as (types: unknown, handler: unknown, options?: { allowUnknownType?: boolean; name?: string }) => void;

  it('a misspelt type fails at registration with a suggestion, and registers nothing', () => {
    const registry = new HandlerRegistry();
    const on = untyped(registry).bind(registry);
    let error: unknown;
    try {
      on('INVOICE_PAYED', noop);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UnknownEventTypeError);
    expect(error).toBeInstanceOf(PayhooksError);
    expect(error).toMatchObject({ eventType: 'INVOICE_PAYED', suggestions: ['INVOICE_PAID'] });
    expect((error as Error).message).toBe(
      'payhooks: on() was given the event type "INVOICE_PAYED", which is not in the catalog: did you mean INVOICE_PAID? ' +
        'For a type this version of payhooks does not know, pass { allowUnknownType: true } as the third argument.',
    );
    expect(registry.size).toBe(0);
    expect(registry.for('INVOICE_PAID')).toEqual([]);
  });

  it('lists the known types when nothing is close, and checks every type of an array', () => {
    const registry = new HandlerRegistry();
    const on = untyped(registry).bind(registry);
    expect(() => on('CUSTOMER_DELETED', noop)).toThrow(`the known types are ${EVENT_TYPES.join(', ')}.`);
    expect(() => on(['INVOICE_PAID', 'invoice.created'], noop)).toThrow(/"invoice\.created".*did you mean INVOICE_CREATED\?/);
    expect(registry.size).toBe(0);
  });

  it('refuses what is not a type name or not a handler, with a TypeError', () => {
    const registry = new HandlerRegistry();
    const on = untyped(registry).bind(registry);
    expect(() => on(undefined, noop)).toThrow(TypeError);
    expect(() => on([], noop)).toThrow(/needs an event type name, or a non-empty array of them/);
    expect(() => on([42], noop)).toThrow(/takes event type names \(non-empty strings\), not 42/);
    expect(() => on('INVOICE_PAID', 'handler')).toThrow(/needs a handler function as its second argument, not string/);
    expect(registry.size).toBe(0);
  });

  it('takes a type outside the catalog when told so, typed as an unknown event', () => {
    const registry = new HandlerRegistry();
    const custom: AnyEventHandler = (event) => {
      if ('unknown' in event) void event.data;
    };
    registry.on('LOYALTY_POINTS_GRANTED', custom, { allowUnknownType: true, name: 'loyalty' });
    registry.on(['INVOICE_PAID', 'INVOICE_PAID_LATE'], custom, { allowUnknownType: true });
    expect(registry.for('LOYALTY_POINTS_GRANTED').map((h) => h.name)).toEqual(['loyalty']);
    expect(registry.for('INVOICE_PAID_LATE')).toHaveLength(1);
    expect(registry.types).toEqual(['INVOICE_PAID', 'INVOICE_PAID_LATE', 'LOYALTY_POINTS_GRANTED']);
  });

  it('hooks.on of createPayhooks refuses the same way, before any database is opened', () => {
    const hooks = createPayhooks({ logger: pino({ level: 'silent' }) });
    // @ts-expect-error: the typed overload takes catalog names only; the run-time check covers plain JavaScript.
    expect(() => hooks.on('INVOICE_PAYED', noop)).toThrow(/did you mean INVOICE_PAID\?/);
    // @ts-expect-error: an unknown name needs `allowUnknownType: true` spelt out, also for TypeScript.
    expect(() => hooks.on('CUSTOM_THING', noop, { allowUnknownType: false })).toThrow(UnknownEventTypeError);
    hooks.on('CUSTOM_THING', noop, { allowUnknownType: true });
    hooks.on('INVOICE_PAID', (event) => void event.data.invoiceId);
    expect(hooks.handlerCount).toBe(2);
  });
});

describe('worker options are checked when createPayhooks is called', () => {
  it.each([
    [{ maxAttempts: 0 }, /maxAttempts must be a whole number of at least 1, not 0/],
    [{ concurrency: 1.5 }, /concurrency must be a whole number of at least 1, not 1.5/],
    [{ pollIntervalMs: -1 }, /pollIntervalMs must be a positive number of milliseconds, not -1/],
    [{ handlerTimeoutMs: 70_000, leaseMs: 60_000 }, /leaseMs \(60000\) must be longer than handlerTimeoutMs \(70000\)/],
    // The worker checks its backoff itself: a library user is refused as the configuration file is.
    [{ backoff: { baseMs: -5 } }, /backoff\.baseMs must be a positive number of milliseconds, not -5/],
    [{ backoff: { baseMs: 1000, maxMs: 500 } }, /backoff\.maxMs \(500\) must not be shorter than baseMs \(1000\)/],
  ])('%j is a RangeError at construction, before any database is opened', (worker, message) => {
    expect(() => createPayhooks({ secret: 's', database: { dataDir: 'memory://' }, worker })).toThrow(RangeError);
    expect(() => createPayhooks({ secret: 's', database: { dataDir: 'memory://' }, worker })).toThrow(message);
  });
});
