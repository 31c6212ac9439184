import { createHmacScheme } from './hmac-scheme.js';
import type { SignatureScheme } from './types.js';

/** Options of {@link createDefaultScheme}. */
export interface DefaultSchemeOptions {
  /** The endpoint's signing secret, or several during a rotation. */
  secrets: string | readonly string[];
  /** Default 300 s, either way. */
  toleranceSeconds?: number | undefined;
  /** Default `x-webhook-timestamp`. */
  timestampHeader?: string | undefined;
  /** Default `x-webhook-signature`. */
  signatureHeader?: string | undefined;
}

/**
 * The default scheme of DESIGN.md: `X-Webhook-Timestamp` holds unix seconds; `X-Webhook-Signature` holds one or
 * more hex HMAC-SHA256 signatures, separated by commas or spaces, each optionally prefixed `v1=`; the signed
 * bytes are `<timestamp>.<raw body>`; the key is the secret's UTF-8 bytes. Upper-case hex is refused, as the contract says lower case.
 *
 * @example
 * const scheme = createDefaultScheme({ secrets: process.env.PAYHOOKS_WEBHOOK_SECRET!.split(',') });
 * scheme.verify({ headers: req.headers, rawBody });
 */
export function createDefaultScheme(options: DefaultSchemeOptions): SignatureScheme {
  return createHmacScheme({
    name: 'default',
    secrets: options.secrets,
    toleranceSeconds: options.toleranceSeconds,
    timestampHeader: options.timestampHeader ?? 'x-webhook-timestamp',
    signatureHeader: options.signatureHeader ?? 'x-webhook-signature',
    encoding: 'hex',
    signedContent: ({ timestamp, rawBody }) => Buffer.concat([Buffer.from(`${timestamp}.`, 'utf8'), rawBody]),
    parseSignatures: (header) =>
      header
        .split(/[\s,]+/)
        .filter(Boolean)
        .map((token) => (token.startsWith('v1=') ? token.slice(3) : token)),
    formatSignature: (signature) => `v1=${signature}`,
  });
}
