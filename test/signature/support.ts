import { execFileSync } from 'node:child_process';
import { WebhookVerificationError } from '../../src/signature/index.js';

/** A fixed "now" for deterministic tests: 2023-11-14T22:13:20Z. */
export const NOW = 1_700_000_000;
export const NOW_MS = NOW * 1000;

/**
 * HMAC-SHA256 of `data` as lower-case hex, computed by the openssl binary (not by node:crypto), so that the
 * expected values do not come from the code under test. The key is passed as text, so it must hold no NUL.
 */
export function opensslHmacHex(key: string, data: Uint8Array): string {
  // The bytes go in on stdin: no temporary file, so the unit tier can share this module between test files.
  const out = execFileSync('openssl', ['dgst', '-sha256', '-hmac', key], { input: data, encoding: 'utf8' });
  const hex = /= ([0-9a-f]{64})\s*$/.exec(out)?.[1];
  if (!hex) throw new Error(`unexpected openssl output: ${out}`);
  return hex;
}

/** Runs `fn`, which must throw a WebhookVerificationError, and returns that error. */
export function failure(fn: () => unknown): WebhookVerificationError {
  try {
    fn();
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err;
    throw err;
  }
  throw new Error('expected a WebhookVerificationError, but nothing was thrown');
}

export const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');
