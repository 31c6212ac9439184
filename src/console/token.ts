import { createHash, timingSafeEqual } from 'node:crypto';
import { estimateTokenBits } from './token-strength.js';

/** The shortest console token accepted: a guessable token would open replay to anyone who can reach the port. */
export const ADMIN_TOKEN_MIN_LENGTH = 32;
/** The fewest distinct characters a console token may have. */
const MIN_DISTINCT_CHARACTERS = 8;
/** The fewest estimated bits ({@link estimateTokenBits}) a console token may have; 32 random bytes have about 250. */
export const ADMIN_TOKEN_MIN_BITS = 100;

const MAKE_ONE = 'use a random one (openssl rand -base64 32)';

/**
 * Why a console token is too weak or cannot work, or null when it will do. The reason never quotes the token.
 *
 * @example
 * adminTokenWeakness('changeme-changeme-changeme-changeme') // 'it repeats a few characters (one short part over and over); use a random one …'
 */
export function adminTokenWeakness(token: string): string | null {
  // A header value is trimmed and carries visible ASCII only: such a token could never be sent, so never match.
  if (/[^\x21-\x7e]/.test(token))
    return 'it contains a space, a control character or a non-ASCII character, which an Authorization header cannot carry';
  if (token.length < ADMIN_TOKEN_MIN_LENGTH) return `it has ${token.length} characters; use ${ADMIN_TOKEN_MIN_LENGTH} or more`;
  if (shortestPeriod(token) <= token.length / 2 || new Set(token).size < MIN_DISTINCT_CHARACTERS)
    return `it repeats a few characters (one short part over and over); ${MAKE_ONE}`;
  const bits = Math.floor(estimateTokenBits(token));
  if (bits < ADMIN_TOKEN_MIN_BITS)
    return `it is made of common words, runs (abcd, 1234) or repeated parts, about ${bits} bits where ${ADMIN_TOKEN_MIN_BITS} are needed; ${MAKE_ONE}`;
  return null;
}

/** The length of the shortest part that, repeated, makes the text (the last repeat may be cut short). */
function shortestPeriod(text: string): number {
  for (let period = 1; period < text.length; period += 1) {
    let repeats = true;
    for (let i = period; i < text.length && repeats; i += 1) repeats = text[i] === text[i - period];
    if (repeats) return period;
  }
  return text.length;
}

/**
 * Whether an Authorization header carries the token as a bearer token. Both sides are hashed first, so the
 * comparison takes the same time whatever the lengths, and timingSafeEqual says nothing about where they differ.
 */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const match = /^Bearer +(\S+)\s*$/i.exec(authorization ?? '');
  const given = createHash('sha256')
    .update(match?.[1] ?? '')
    .digest();
  const expected = createHash('sha256').update(token).digest();
  return timingSafeEqual(given, expected) && match !== null;
}
