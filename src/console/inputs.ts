// What the console's API accepts as text from a request, checked before any of it reaches the database: a value
// the database would refuse (U+0000, a position past bigint) is the client's mistake, answered 400, never a 500.
import { z } from 'zod';
import { MAX_IDENTIFIER_LENGTH } from '../events/index.js';
import { isAccountId } from '../store/accounts.js';

const noNul = (value: string) => !value.includes('\u0000');
const NUL_MESSAGE = 'must not contain U+0000, which the database cannot hold';

/** An eventId or event type as stored: 1 to 255 characters, no U+0000. */
export const identifierText = z
  .string()
  .min(1, 'must not be empty')
  .max(MAX_IDENTIFIER_LENGTH, `must be at most ${MAX_IDENTIFIER_LENGTH} characters`)
  .refine(noNul, NUL_MESSAGE);

/** A filter's text (a type, a resource key, an eventId prefix): a little longer than an identifier, no U+0000. */
export const filterText = z
  .string()
  .min(1, 'must not be empty')
  .max(MAX_IDENTIFIER_LENGTH + 64, `must be at most ${MAX_IDENTIFIER_LENGTH + 64} characters`)
  .refine(noNul, NUL_MESSAGE);

/** The largest arrival position there can be (the inbox's bigint sequence). */
const MAX_POSITION = 2n ** 63n - 1n;

const DIGITS = /^\d{1,19}$/;

/** An arrival position (a page's `nextCursor`): digits of a bigint. */
export const arrivalPosition = z
  .string()
  .regex(DIGITS, 'expected the nextCursor of a page')
  // zod runs every check, also after the regex failed: BigInt() only on what it passed.
  .refine(
    (value) => !DIGITS.test(value) || BigInt(value) <= MAX_POSITION,
    'expected the nextCursor of a page (this one is past any position)',
  );

/** An account id, as configured (docs/accounts.md): lower-case letters, digits, `-` and `_`. */
export const accountId = z.string().refine(isAccountId, 'expected an account id: lower-case letters, digits, "-" and "_", at most 63');
