import { createHmacScheme } from './hmac-scheme.js';
import type { SignatureScheme } from './types.js';

/** Options of {@link createDefaultScheme}. */
export interface DefaultSchemeOptions {
  /**
   * The endpoint's signing secret (GET /v1/webhooks/{id}/secret), or several during a rotation: an array, or one
   * string separated by commas (as PAYHOOKS_WEBHOOK_SECRET holds them). See {@link parseSecretList}.
   */
  secrets: string | readonly string[];
  /** How far the timestamp may be from now, either way, measured to the millisecond. Default 300 s. */
  toleranceSeconds?: number | undefined;
  /** Default `x-webhook-timestamp`. */
  timestampHeader?: string | undefined;
  /** Default `x-webhook-signature`. */
  signatureHeader?: string | undefined;
}

const PREFIX = 'v1=';
const SEPARATOR = /[\s,]/;
const SEPARATORS = /[\s,]+/;
const withoutPrefix = (entry: string) => (entry.startsWith(PREFIX) ? entry.slice(PREFIX.length) : entry);

/**
 * The default scheme (docs/signatures.md): the timestamp header holds unix seconds; the signature header holds
 * one or more HMAC-SHA256 signatures in hex, separated by commas or whitespace, each optionally prefixed `v1=`;
 * the signed bytes are `<timestamp>.<raw body>`; the key is the secret's UTF-8 bytes; 300 s tolerance either way.
 *
 * Hex is lower case only, as the contract says, so a signature has one spelling. A timestamp of 13 digits or more
 * is read as milliseconds (the signed string still holds the header's text verbatim). Entries with another prefix
 * (`v0=…`) are ignored. `sign` writes one `v1=<hex>`.
 *
 * @example
 * const scheme = createDefaultScheme({ secrets: process.env.PAYHOOKS_WEBHOOK_SECRET! }); // "new,old" during a rotation
 * const { timestamp, matchedSecretIndex } = scheme.verify({ headers: req.headers, rawBody });
 */
export function createDefaultScheme(options: DefaultSchemeOptions): SignatureScheme {
  return createHmacScheme({
    name: 'default',
    secrets: options.secrets,
    toleranceSeconds: options.toleranceSeconds,
    timestampHeader: options.timestampHeader ?? 'x-webhook-timestamp',
    signatureHeader: options.signatureHeader ?? 'x-webhook-signature',
    encoding: 'hex',
    signedContent: ({ timestamp, rawBody }) => [`${timestamp}.`, rawBody],
    parseSignatures: (value) => (SEPARATOR.test(value) ? value.split(SEPARATORS).map(withoutPrefix) : [withoutPrefix(value)]),
    formatSignature: (signature) => `${PREFIX}${signature}`,
  });
}
