import { describe, expect, it } from 'vitest';
import { storable, storableText } from '../../src/internal/storable-text.js';

describe('storableText', () => {
  it('replaces U+0000 and lone surrogates with U+FFFD, and keeps surrogate pairs and everything else', () => {
    expect(storableText('Ada\u0000Lovelace\u0000')).toBe('Ada\ufffdLovelace\ufffd');
    expect(storableText('a\ud800b\udc00c')).toBe('a\ufffdb\ufffdc');
    expect(storableText('\udc00\ud800')).toBe('\ufffd\ufffd');
    expect(storableText('tu\u00e9 \ud83d\ude00 \\u0000 \u0001')).toBe('tu\u00e9 \ud83d\ude00 \\u0000 \u0001');
  });
});

describe('storable', () => {
  it('maps every string at any depth, keys included, and leaves other values as they are', () => {
    const at = new Date('2026-11-29T00:00:00Z');
    const bytes = Buffer.from([0]);
    const value = { name: 'A\u0000', 'k\u0000': [{ deep: ['\ud800', 1, null, true] }], at, bytes, n: 5 };
    const mapped = storable(value);
    expect(mapped).toEqual({ name: 'A\ufffd', 'k\ufffd': [{ deep: ['\ufffd', 1, null, true] }], at, bytes, n: 5 });
    expect(mapped.at).toBe(at);
    expect(mapped.bytes).toBe(bytes);
    // The input is not changed.
    expect(value.name).toBe('A\u0000');
  });

  it('returns the value itself when nothing in it needs replacing', () => {
    const value = { id: 'cus_1', meta: { crmId: 'CRM-1' }, items: [{ description: 'Rent' }] };
    expect(storable(value)).toBe(value);
    const partly = { same: { a: 'x' }, changed: 'y\u0000' };
    expect(storable(partly).same).toBe(partly.same);
  });
});
