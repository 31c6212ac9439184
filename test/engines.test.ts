// package.json promises Node 20.11 (engines), and `npm install` of payhooks must not warn EBADENGINE there: every
// package the lockfile installs for users (not the devDependencies) must admit that version. @nats-io/nuid 3.0.0,
// pulled by the NATS client 3.4, declared Node 22 and broke the promise.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (path: string) => JSON.parse(readFileSync(new URL(`../${path}`, import.meta.url), 'utf8'));

type Version = [number, number, number];

/** `20.11`, `18.x`, `22` as [major, minor, patch], a missing or `x` part 0. */
function version(text: string): Version {
  const parts = text.trim().split('.');
  const number = (part: string | undefined) => (part === undefined || part === 'x' || part === '*' ? 0 : Number(part));
  const parsed: Version = [number(parts[0]), number(parts[1]), number(parts[2])];
  if (parsed.some(Number.isNaN)) throw new Error(`not a version: ${text}`);
  return parsed;
}

const compare = (a: Version, b: Version) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

/**
 * Whether `node` satisfies an engines range of the forms the lockfile holds (`>=18`, `>= 22.x`, `^16 || ^18 || >=20`,
 * `*`); any other form throws, so that a new one is read here before it is trusted.
 */
function admits(range: string, node: Version): boolean {
  return range.split('||').some((alternative) => {
    const text = alternative.trim();
    if (text === '*' || text === '') return true;
    const atLeast = /^>=\s*(\S+)$/.exec(text);
    if (atLeast) return compare(node, version(atLeast[1]!)) >= 0;
    const caret = /^\^\s*(\S+)$/.exec(text);
    if (caret) {
      const floor = version(caret[1]!);
      return node[0] === floor[0] && compare(node, floor) >= 0;
    }
    throw new Error(`an engines range this test does not read: ${range}`);
  });
}

describe('the Node version package.json promises', () => {
  it('is admitted by the engines of every package installed with payhooks', () => {
    const promised = /^>=\s*(\S+)$/.exec(read('package.json').engines.node);
    expect(promised, 'package.json engines.node is a >= range').not.toBeNull();
    const node = version(promised![1]!);
    const packages: Record<string, { dev?: boolean; engines?: { node?: string } }> = read('package-lock.json').packages;
    const checked: string[] = [];
    const refusing: string[] = [];
    for (const [path, entry] of Object.entries(packages)) {
      const range = entry.engines?.node;
      if (path === '' || entry.dev || range === undefined) continue;
      checked.push(path);
      if (!admits(range, node)) refusing.push(`${path.replace(/^.*node_modules\//, '')} (node ${range})`);
    }
    // The runtime dependencies declare engines; none read would make this pass for nothing.
    expect(checked.length).toBeGreaterThan(10);
    expect(refusing).toEqual([]);
  });
});
