import { createHmacScheme } from './hmac-scheme.js';
import type { SignatureScheme } from './types.js';

/** Options of {@link createStandardWebhooksScheme}. */
export interface StandardWebhooksSchemeOptions {
  /** `whsec_<base64>` secrets (the prefix is optional); several during a rotation. */
  secrets: string | readonly string[];
  /** Default 300 s, either way. */
  toleranceSeconds?: number | undefined;
}

const PREFIX = 'whsec_';

/** The key bytes of a Standard Webhooks secret: base64 after the optional `whsec_` prefix, as the reference library reads it. */
function standardWebhooksKey(secret: string): Uint8Array {
  const encoded = secret.startsWith(PREFIX) ? secret.slice(PREFIX.length) : secret;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) {
    throw new Error('A Standard Webhooks secret is base64 after the optional whsec_ prefix.');
  }
  return Buffer.from(encoded, 'base64');
}

/**
 * The Standard Webhooks preset: headers `webhook-id`, `webhook-timestamp` and `webhook-signature`
 * (space-separated `v1,<base64>` entries), signed content `<id>.<timestamp>.<body>`, `whsec_` secrets.
 *
 * @example
 * const scheme = createStandardWebhooksScheme({ secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] });
 */
export function createStandardWebhooksScheme(options: StandardWebhooksSchemeOptions): SignatureScheme {
  return createHmacScheme({
    name: 'standard-webhooks',
    secrets: options.secrets,
    toleranceSeconds: options.toleranceSeconds,
    timestampHeader: 'webhook-timestamp',
    signatureHeader: 'webhook-signature',
    idHeader: 'webhook-id',
    encoding: 'base64',
    deriveKey: standardWebhooksKey,
    signedContent: ({ webhookId, timestamp, rawBody }) => Buffer.concat([Buffer.from(`${webhookId}.${timestamp}.`, 'utf8'), rawBody]),
    parseSignatures: (header) =>
      header
        .split(' ')
        .filter((entry) => entry.startsWith('v1,'))
        .map((entry) => entry.slice(3)),
    formatSignature: (signature) => `v1,${signature}`,
  });
}
