import { createHmacScheme } from './hmac-scheme.js';
import type { SignatureScheme } from './types.js';

/** Options of {@link createStandardWebhooksScheme}. */
export interface StandardWebhooksSchemeOptions {
  /** `whsec_<base64>` secrets (the prefix is optional); several during a rotation (an array, or one string separated by commas). */
  secrets: string | readonly string[];
  /** How far `webhook-timestamp` may be from now, either way. Default 300 s. */
  toleranceSeconds?: number | undefined;
}

const SECRET_PREFIX = 'whsec_';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The key bytes of a Standard Webhooks secret: the base64 after the `whsec_` prefix, or the whole string read as
 * base64 when there is no prefix, as the reference library does. Padding may be left off; anything that is not
 * base64 is refused (the reference library sometimes drops a stray last character silently instead).
 */
function standardWebhooksKey(secret: string): Uint8Array {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  if (!BASE64.test(encoded) || encoded.replace(/=+$/, '').length % 4 === 1 || (encoded.includes('=') && encoded.length % 4 !== 0)) {
    throw new TypeError(`A Standard Webhooks secret is "${SECRET_PREFIX}" followed by base64 (or bare base64); this one is not.`);
  }
  return Buffer.from(encoded, 'base64');
}

/**
 * The Standard Webhooks preset (https://www.standardwebhooks.com): headers `webhook-id`, `webhook-timestamp`
 * (unix seconds) and `webhook-signature` (space-separated `v1,<base64>` entries; other versions such as `v1a` are
 * ignored), signed content `<id>.<timestamp>.<raw body>`, HMAC-SHA256 keyed with the base64-decoded secret.
 * Verifies what the `standardwebhooks` package signs and signs what it verifies.
 *
 * Senders built on Svix send the same headers named `svix-id`, `svix-timestamp` and `svix-signature`; those are
 * read too. When a request carries any `webhook-*` header, the `webhook-*` set is read and the `svix-*` one
 * ignored; the three headers are never mixed across the two sets. `sign` writes `webhook-*`.
 *
 * A delivery's age is measured to the millisecond, as the Go, Python and C# reference libraries do: with the
 * default tolerance a delivery 300.5 s old is refused (the JavaScript package rounds down and would accept it).
 *
 * @example
 * const scheme = createStandardWebhooksScheme({ secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] });
 * const { webhookId } = scheme.verify({ headers: req.headers, rawBody });
 */
export function createStandardWebhooksScheme(options: StandardWebhooksSchemeOptions): SignatureScheme {
  return createHmacScheme({
    name: 'standard-webhooks',
    secrets: options.secrets,
    toleranceSeconds: options.toleranceSeconds,
    idHeader: 'webhook-id',
    timestampHeader: 'webhook-timestamp',
    signatureHeader: 'webhook-signature',
    fallbackHeaders: [{ idHeader: 'svix-id', timestampHeader: 'svix-timestamp', signatureHeader: 'svix-signature' }],
    encoding: 'base64',
    deriveKey: standardWebhooksKey,
    signedContent: ({ webhookId, timestamp, rawBody }) => [`${webhookId}.${timestamp}.`, rawBody],
    parseSignatures: (value) =>
      value.split(/\s+/).flatMap((entry) => {
        const [version, signature] = entry.split(',');
        return version === 'v1' && signature !== undefined ? [signature] : [];
      }),
    formatSignature: (signature) => `v1,${signature}`,
  });
}
