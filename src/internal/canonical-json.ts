import { compareText } from './compare-text.js';

/**
 * JSON with every object's keys in one order ({@link compareText}), so that equal values give equal text whatever
 * order their keys came in: what the mirror hashes and what verify compares.
 *
 * @example
 * canonicalJson({ b: 1, a: { d: 2, c: 3 } }); // '{"a":{"c":3,"d":2},"b":1}'
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => compareText(a, b)))
      : v,
  );
}
