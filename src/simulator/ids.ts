import { randomBytes } from 'node:crypto';

/** The id prefixes of the simulated resources. */
export type IdPrefix =
  | 'org'
  | 'cus'
  | 'con'
  | 'inv'
  | 'pay'
  | 'att'
  | 'we'
  | 'whevt'
  | 'evt'
  | 'ref'
  | 'dsp'
  | 'dspr'
  | 'sub'
  | 'pm'
  | 'card'
  | 'bank';

/**
 * A fresh id with its resource's prefix, e.g. `inv_Xq3…`: 12 random base64url characters, so that ids from
 * two simulator runs never collide in one receiver's inbox.
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(9).toString('base64url')}`;
}

/** A webhook signing secret: 32 random bytes, base64url (43 characters). */
export function newSecret(): string {
  return randomBytes(32).toString('base64url');
}
