import { isAccountId } from '../store/accounts.js';
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

/**
 * A commander parser for `--account <id>`: an account id as configured (docs/accounts.md), refused with the rule.
 *
 * @example
 * command.option('--account <id>', 'only this account', accountOption);
 */
export function accountOption(value: string): string {
  if (!isAccountId(value))
    throw new UsageError(`--account takes an account id (lower-case letters, digits, "-" and "_"), not ${JSON.stringify(value)}.`);
  return value;
}
