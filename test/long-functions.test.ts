// No function in src/ longer than 150 lines (issue 47): the listing itself is checked on made-up sources (so that an
// empty listing of src/ means something), then src/ is held to it.
import { describe, expect, it } from 'vitest';
import { longFunctions, longFunctionsIn, MAX_FUNCTION_LINES } from '../scripts/long-functions.js';

/** A body of `n` lines in all, counting the lines that open and close it. */
const body = (n: number) => Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n');

describe('the listing of long functions', () => {
  it('counts from the line a function is declared on to the line it ends on, and lists only those over the limit', () => {
    const source = [
      `export function atLimit() {\n${body(MAX_FUNCTION_LINES)}\n}`,
      `export function overLimit() {\n${body(MAX_FUNCTION_LINES + 1)}\n}`,
    ].join('\n');
    expect(longFunctionsIn('made-up.ts', source)).toEqual([
      { file: 'made-up.ts', line: MAX_FUNCTION_LINES + 1, name: 'overLimit', lines: 151 },
    ]);
  });

  it('names arrow functions, methods, object properties and nested functions by what binds them', () => {
    const source = [
      `const arrow = async (a: number): Promise<void> => {\n${body(12)}\n};`,
      `class Holder {\n  method(): void {\n${body(12)}\n  }\n}`,
      `const holder = {\n  property: function () {\n${body(12)}\n  },\n};`,
      `function outer() {\n  function inner() {\n${body(12)}\n  }\n}`,
    ].join('\n');
    const names = longFunctionsIn('made-up.ts', source, 10).map((fn) => fn.name);
    expect(names).toEqual(['arrow', 'method', 'property', 'outer', 'inner']);
  });

  it('refuses a source it cannot parse instead of listing nothing', () => {
    expect(() => longFunctionsIn('broken.ts', 'function (')).toThrow(/broken\.ts: cannot be parsed/);
  });
});

describe('src/', () => {
  it(`has no function over ${MAX_FUNCTION_LINES} lines`, () => {
    expect(longFunctions()).toEqual([]);
  });
});
