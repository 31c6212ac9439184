import { createHash, timingSafeEqual } from 'node:crypto';

/** The shortest console token accepted: a guessable token would open replay to anyone who can reach the port. */
export const ADMIN_TOKEN_MIN_LENGTH = 32;

/** Why a console token is too weak, or null when it will do. */
export function adminTokenWeakness(token: string): string | null {
  if (token.length < ADMIN_TOKEN_MIN_LENGTH) return `it has ${token.length} characters; use ${ADMIN_TOKEN_MIN_LENGTH} or more`;
  if (new Set(token).size < 8) return 'it repeats a few characters; use a random one (openssl rand -base64 32)';
  return null;
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
