import { createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from './errors.js';
import type { HeaderMap, SignatureScheme, SignInput, VerifiedDelivery, VerifyInput } from './types.js';

/** The parts a scheme signs. `timestamp` is the header's text verbatim. */
export interface SignedParts {
  timestamp: string;
  webhookId: string | undefined;
  rawBody: Uint8Array;
}

/** Options of {@link createHmacScheme}: every part of an HMAC-SHA256 signing scheme. */
export interface HmacSchemeOptions {
  /** A name for logs. Default `custom`. */
  name?: string | undefined;
  /** One secret, or several during a rotation (any may match). */
  secrets: string | readonly string[];
  /** Header holding the timestamp (unix seconds, or milliseconds when it has 13 digits or more). */
  timestampHeader: string;
  /** Header holding one or more signatures. */
  signatureHeader: string;
  /** Header holding a delivery id, when the scheme signs one. */
  idHeader?: string | undefined;
  /** The exact bytes to sign. */
  signedContent(parts: SignedParts): Uint8Array;
  /** How a signature is written. */
  encoding: 'hex' | 'base64';
  /** Splits the signature header into candidate signatures, prefixes removed; ignores what it cannot read. */
  parseSignatures(header: string): string[];
  /** Writes one signature as it goes in the header. */
  formatSignature(signature: string): string;
  /** The HMAC key of a secret. Default: its UTF-8 bytes. */
  deriveKey?: ((secret: string) => Uint8Array) | undefined;
  /** How far the timestamp may be from now, either way. Default 300 s. */
  toleranceSeconds?: number | undefined;
}

/** Timestamps of 13 digits or more are milliseconds: seconds reach 13 digits only after the year 33658. */
const MILLISECONDS_FROM = 1e12;

// Lower case only, as the contract says: accepting both cases would make two spellings of one signature.
const HEX = /^(?:[0-9a-f]{2})+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

/** Normalizes the secrets option: trims nothing, refuses empty lists and empty strings. */
export function secretList(secrets: string | readonly string[]): string[] {
  const list = typeof secrets === 'string' ? [secrets] : [...secrets];
  if (list.length === 0) throw new Error('A signature scheme needs at least one secret.');
  if (list.some((secret) => typeof secret !== 'string' || secret.length === 0)) {
    throw new Error('A webhook secret must be a non-empty string.');
  }
  return list;
}

function headerValue(headers: HeaderMap, name: string): string | undefined {
  const value = headers[name];
  if (value === undefined) return undefined;
  return typeof value === 'string' ? value : value.join(',');
}

/**
 * Builds an HMAC-SHA256 signature scheme from its parts; the default and Standard Webhooks presets are
 * made with it, and so can a scheme for a sender that signs differently.
 *
 * @example
 * const scheme = createHmacScheme({
 *   secrets: ['s3cret'], timestampHeader: 'x-ts', signatureHeader: 'x-sig', encoding: 'base64',
 *   signedContent: ({ timestamp, rawBody }) => Buffer.concat([Buffer.from(`${timestamp}:`), rawBody]),
 *   parseSignatures: (header) => header.split(','), formatSignature: (s) => s,
 * });
 */
export function createHmacScheme(options: HmacSchemeOptions): SignatureScheme {
  const secrets = secretList(options.secrets);
  const toleranceSeconds = options.toleranceSeconds ?? 300;
  if (!(toleranceSeconds > 0) || !Number.isFinite(toleranceSeconds)) {
    throw new Error(`toleranceSeconds must be a positive number of seconds, not ${String(toleranceSeconds)}.`);
  }
  const deriveKey = options.deriveKey ?? ((secret: string) => Buffer.from(secret, 'utf8'));
  const keys = secrets.map((secret) => deriveKey(secret));
  const timestampHeader = options.timestampHeader.toLowerCase();
  const signatureHeader = options.signatureHeader.toLowerCase();
  const idHeader = options.idHeader?.toLowerCase();
  const wellFormed = options.encoding === 'hex' ? HEX : BASE64;

  const digest = (key: Uint8Array, parts: SignedParts) => createHmac('sha256', key).update(options.signedContent(parts)).digest();

  function verify(input: VerifyInput): VerifiedDelivery {
    const timestampText = headerValue(input.headers, timestampHeader)?.trim();
    if (!timestampText) throw new WebhookVerificationError('missing_header', `The ${timestampHeader} header is missing.`);
    if (!/^\d{1,16}$/.test(timestampText)) {
      throw new WebhookVerificationError('malformed_header', `The ${timestampHeader} header is not a unix timestamp (whole seconds or milliseconds).`);
    }
    const webhookId = idHeader ? headerValue(input.headers, idHeader)?.trim() : undefined;
    if (idHeader && !webhookId) throw new WebhookVerificationError('missing_header', `The ${idHeader} header is missing.`);
    const signatureText = headerValue(input.headers, signatureHeader);
    if (!signatureText?.trim()) throw new WebhookVerificationError('missing_header', `The ${signatureHeader} header is missing.`);
    const candidates = options
      .parseSignatures(signatureText)
      .filter((signature) => wellFormed.test(signature))
      .map((signature) => Buffer.from(signature, options.encoding));
    if (candidates.length === 0) {
      throw new WebhookVerificationError('malformed_header', `The ${signatureHeader} header holds no ${options.encoding} signature this scheme can read.`);
    }

    const raw = Number(timestampText);
    const timestamp = raw >= MILLISECONDS_FROM ? Math.floor(raw / 1000) : raw;
    const nowSeconds = Math.floor(Number(input.now ?? Date.now()) / 1000);
    if (nowSeconds - timestamp > toleranceSeconds) {
      throw new WebhookVerificationError(
        'timestamp_too_old',
        `The delivery's timestamp is ${nowSeconds - timestamp} s old, over the tolerance of ${toleranceSeconds} s (a replay, or a clock off).`,
      );
    }
    if (timestamp - nowSeconds > toleranceSeconds) {
      throw new WebhookVerificationError(
        'timestamp_in_future',
        `The delivery's timestamp is ${timestamp - nowSeconds} s in the future, over the tolerance of ${toleranceSeconds} s (a clock off).`,
      );
    }

    const parts: SignedParts = { timestamp: timestampText, webhookId, rawBody: input.rawBody };
    let matchedSecretIndex = -1;
    keys.forEach((key, index) => {
      const expected = digest(key, parts);
      for (const candidate of candidates) {
        if (candidate.length === expected.length && timingSafeEqual(candidate, expected) && matchedSecretIndex < 0) {
          matchedSecretIndex = index;
        }
      }
    });
    if (matchedSecretIndex < 0) {
      throw new WebhookVerificationError(
        'no_matching_signature',
        `No signature in ${signatureHeader} matches the body with any of the ${keys.length} configured secret(s). ` +
          'Check that the raw request body reaches the verifier byte for byte (no JSON parsing and re-serialising, ' +
          'no body parser before the webhook route), and that the secret is this endpoint\'s signing secret ' +
          '(GET /v1/webhooks/{id}/secret).',
      );
    }
    return { timestamp, webhookId, matchedSecretIndex };
  }

  function sign(input: SignInput): Record<string, string> {
    const secret = input.secret ?? secrets[0]!;
    const timestamp = String(input.timestamp ?? Math.floor(Date.now() / 1000));
    const webhookId = idHeader ? (input.webhookId ?? `msg_${randomUUID()}`) : undefined;
    const rawBody = typeof input.rawBody === 'string' ? Buffer.from(input.rawBody, 'utf8') : input.rawBody;
    const signature = digest(deriveKey(secret), { timestamp, webhookId, rawBody }).toString(options.encoding);
    return {
      [timestampHeader]: timestamp,
      [signatureHeader]: options.formatSignature(signature),
      ...(idHeader && webhookId ? { [idHeader]: webhookId } : {}),
    };
  }

  return { name: options.name ?? 'custom', headerNames: [timestampHeader, signatureHeader, ...(idHeader ? [idHeader] : [])], verify, sign };
}
