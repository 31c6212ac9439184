import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { certainValidator } from '../../src/events/certain-validator.js';
import { EDGE_CASE_EVENTS, EVENT_DATA_SCHEMAS, EVENT_TYPES, exampleEvent, type EventType } from '../../src/events/index.js';

/** Every path to a value inside `value` (objects and arrays), the root included. */
function pathsOf(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  const paths = [at];
  if (Array.isArray(value)) for (const [i, item] of value.entries()) paths.push(...pathsOf(item, [...at, i]));
  else if (typeof value === 'object' && value !== null)
    for (const [key, item] of Object.entries(value)) paths.push(...pathsOf(item, [...at, key]));
  return paths;
}

/** A copy of `value` with the value at `path` replaced (or removed, for `undefined`). */
function replaced(value: unknown, path: (string | number)[], by: unknown): unknown {
  const copy = JSON.parse(JSON.stringify(value));
  if (path.length === 0) return by;
  let parent = copy;
  for (const step of path.slice(0, -1)) parent = parent[step];
  const last = path.at(-1)!;
  if (by === undefined && !Array.isArray(parent)) delete parent[last];
  else parent[last] = by;
  return copy;
}

const tricky = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom(
    undefined,
    '',
    'x',
    '\ud800',
    'MXN',
    'mxn',
    'MXNX',
    '2026-11-30T06:00:00.000Z',
    '2026-11-30T06:00:00+02:00',
    '2026-02-30T06:00:00Z',
    '2026-11-30',
    1.5,
    -0,
    2 ** 53,
    Number.MAX_SAFE_INTEGER,
    true,
    [],
    {},
    { __proto__: null, a: 1 },
  ),
);

describe('certainValidator', () => {
  it.each(EVENT_TYPES)('covers the %s schema and is certain of its example', (type) => {
    const valid = certainValidator(EVENT_DATA_SCHEMAS[type]);
    expect(valid).toBeDefined();
    expect(valid!(JSON.parse(JSON.stringify(exampleEvent(type).data)))).toBe(true);
  });

  it('is certain of the edge cases zod accepts, and of nothing zod refuses', () => {
    for (const { event } of EDGE_CASE_EVENTS) {
      const schema = EVENT_DATA_SCHEMAS[event.eventType as EventType];
      if (!schema) continue;
      const data = JSON.parse(JSON.stringify(event.data));
      const zodSays = schema.safeParse(data).success;
      expect(certainValidator(schema)!(data), event.eventId).toBe(zodSays);
    }
  });

  it('never says yes where zod says no, whatever value is put anywhere in an example', () => {
    const cases = EVENT_TYPES.flatMap((type) => {
      const data = JSON.parse(JSON.stringify(exampleEvent(type).data));
      return pathsOf(data).map((path) => ({ type, data, path }));
    });
    let certain = 0;
    let refused = 0;
    fc.assert(
      fc.property(fc.constantFrom(...cases), tricky, ({ type, data, path }, by) => {
        const value = replaced(data, path, by);
        const schema = EVENT_DATA_SCHEMAS[type];
        const zodSays = schema.safeParse(value).success;
        const says = certainValidator(schema)!(value);
        if (says) {
          certain++;
          expect(zodSays, `${type} ${path.join('.')} = ${JSON.stringify(by)}`).toBe(true);
        }
        if (!zodSays) refused++;
      }),
      { numRuns: 5000 },
    );
    // Both kinds were met: the property was not vacuous.
    expect(certain).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  });

  it('leaves schemas of other kinds to zod', () => {
    expect(certainValidator(z.union([z.string(), z.number()]))).toBeUndefined();
    expect(certainValidator(z.object({ a: z.string() }))).toBeUndefined(); // strips unknown keys: not a loose object
    expect(certainValidator(z.looseObject({ a: z.string().email() }))).toBeUndefined();
    expect(certainValidator(z.looseObject({ a: z.string() }).refine(() => false))).toBeUndefined();
    expect(certainValidator(z.coerce.number())).toBeUndefined();
    expect(certainValidator(z.string().max(3))).toBeUndefined();
  });
});
