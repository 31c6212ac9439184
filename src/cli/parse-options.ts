import { UsageError } from './cli-errors.js';

/**
 * A commander parser for a positive whole number that names its flag when it refuses.
 *
 * @example
 * command.option('--limit <n>', 'at most this many', positiveInt('--limit'), 100);
 */
export function positiveInt(flag: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n <= 0)
      throw new UsageError(`${flag} takes a positive whole number, not ${JSON.stringify(value)}.`);
    return n;
  };
}
