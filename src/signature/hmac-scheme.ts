import { createHmac, createSecretKey, type KeyObject, randomUUID, timingSafeEqual } from 'node:crypto';
import { assertRawBody } from './assert-raw-body.js';
import { WebhookVerificationError } from './errors.js';
import { parseSecretList } from './secret-list.js';
import type { HeaderMap, SignatureScheme, SignInput, VerifiedDelivery, VerifyInput } from './types.js';

/** How far a delivery's timestamp may be from now, either way, unless a scheme is told otherwise. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** The parts a scheme signs. `timestamp` is the header's text exactly as sent (never re-rendered from a number). */
export interface SignedParts {
  timestamp: string;
  /** The id header's value, for schemes with an `idHeader`; otherwise undefined. */
  webhookId: string | undefined;
  rawBody: Uint8Array;
}

/** The names of the headers a scheme reads, as one set. */
export interface HeaderNames {
  timestampHeader: string;
  signatureHeader: string;
  idHeader?: string | undefined;
}

/** Options of {@link createHmacScheme}: every part of an HMAC-SHA256 signing scheme. */
export interface HmacSchemeOptions {
  /** A name for logs. Default `custom`. */
  name?: string | undefined;
  /** One secret, or several during a rotation (any may match): an array, or a string separated by commas. See {@link parseSecretList}. */
  secrets: string | readonly string[];
  /** Header holding the timestamp: unix seconds, or milliseconds (see {@link createHmacScheme}). Any case; stored lower-case. */
  timestampHeader: string;
  /** Header holding one or more signatures. */
  signatureHeader: string;
  /** Header holding a delivery id, for schemes that sign one. Verification then requires it. */
  idHeader?: string | undefined;
  /**
   * Other names some senders give the same headers (e.g. Svix's `svix-id`, `svix-timestamp`, `svix-signature`),
   * each a complete set. A request is read with the first set, the main names first, that has any of its headers
   * present; its other headers are then required under that set's names, never mixed with another set's. `sign`
   * writes the main names. Each set has an `idHeader` exactly when the main names do.
   */
  fallbackHeaders?: readonly HeaderNames[] | undefined;
  /**
   * The exact bytes to sign, or the pieces they are made of in order (text pieces count as their UTF-8 bytes), which
   * spares copying the body: `[\`${timestamp}.\`, rawBody]`. Never decode `rawBody` into a string.
   */
  signedContent: (parts: SignedParts) => Uint8Array | readonly (Uint8Array | string)[];
  /** How a signature is written. Hex is lower case, read and written. */
  encoding: 'hex' | 'base64';
  /**
   * Splits one signature header value into candidate signatures with their prefixes removed. Entries it cannot
   * read may be returned as they are: those that are not well-formed `encoding` are skipped. Default: split on
   * commas and whitespace.
   */
  parseSignatures?: ((headerValue: string) => string[]) | undefined;
  /** Writes one encoded signature as it goes in the header (e.g. adds `v1=`). Default: as it is. */
  formatSignature?: ((signature: string) => string) | undefined;
  /** The HMAC key of a secret. Default: its UTF-8 bytes. Called once per secret, when the scheme is built. */
  deriveKey?: ((secret: string) => Uint8Array) | undefined;
  /** How far the timestamp may be from now, either way, in seconds. Default 300. */
  toleranceSeconds?: number | undefined;
}

/**
 * A header value of 13 digits or more is milliseconds: as seconds it would be after the year 33658, while every
 * millisecond timestamp since September 2001 has 13 digits.
 */
const MILLISECONDS_FROM = 1e12;
const TIMESTAMP = /^\d{1,15}$/;
const WELL_FORMED = {
  // Lower case only, as the contract in docs/signatures.md says: a signature has one spelling, so any flipped bit of the
  // header (a case bit included) is a different, failing signature.
  hex: /^(?:[0-9a-f]{2})+$/,
  base64: /^[A-Za-z0-9+/]+={0,2}$/,
} as const;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Builds an HMAC-SHA256 signature scheme from its parts. The default and the Standard Webhooks presets are built
 * with it; use it directly for a sender that names its headers or builds its signed string differently.
 *
 * Verification reads and checks the headers, then the signature, then the timestamp: a stale or future timestamp
 * is only reported for a delivery whose signature is valid, so those reasons point at a real replay or a clock
 * difference, never at forged input. Every candidate signature is compared with every secret's HMAC (lengths
 * first, then `timingSafeEqual`), without stopping at the first match.
 *
 * Timestamps: whole unix seconds; a value of 13 digits or more is read as milliseconds. The signed string always
 * holds the header's text verbatim. A delivery's age is measured to the millisecond, as the Go, Python and C#
 * Standard Webhooks libraries measure it: with the default 300 s, one sent 300.5 s ago is refused.
 *
 * Configuration mistakes (no secret, a bad header name, a tolerance that is not a positive number, …) throw a
 * TypeError or RangeError here, when the scheme is built; {@link WebhookVerificationError} is only ever about a
 * delivery.
 *
 * @example
 * // A sender that puts base64 of HMAC(secret, body + ":" + timestamp) in `x-sig`:
 * const scheme = createHmacScheme({
 *   secrets: [process.env.SENDER_SECRET!],
 *   timestampHeader: 'x-ts',
 *   signatureHeader: 'x-sig',
 *   encoding: 'base64',
 *   signedContent: ({ timestamp, rawBody }) => Buffer.concat([rawBody, Buffer.from(`:${timestamp}`)]),
 * });
 */
export function createHmacScheme(options: HmacSchemeOptions): SignatureScheme {
  const name = options.name ?? 'custom';
  const secrets = secretList(options.secrets);
  const toleranceSeconds = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  if (typeof toleranceSeconds !== 'number' || !Number.isFinite(toleranceSeconds) || toleranceSeconds <= 0) {
    throw new RangeError(`toleranceSeconds must be a positive number of seconds, not ${String(toleranceSeconds)}.`);
  }
  const toleranceMs = toleranceSeconds * 1000;
  const main = headerSet(options, '');
  if (options.fallbackHeaders !== undefined && !Array.isArray(options.fallbackHeaders)) {
    throw new TypeError('fallbackHeaders must be an array of header name sets ({ timestampHeader, signatureHeader, idHeader? }).');
  }
  const fallbacks = (options.fallbackHeaders ?? []).map((set, index) => {
    const names = headerSet(set, `fallbackHeaders[${index}].`);
    if ((names.idHeader === undefined) !== (main.idHeader === undefined)) {
      throw new TypeError(`fallbackHeaders[${index}] must have an idHeader exactly when the scheme has one.`);
    }
    return names;
  });
  const headerSets = [main, ...fallbacks];
  const headerNames = headerSets.flatMap(namesOf);
  if (new Set(headerNames).size !== headerNames.length) throw new TypeError(`The header names must differ: ${headerNames.join(', ')}.`);
  const { idHeader, timestampHeader, signatureHeader } = main;
  const { encoding, signedContent } = options;
  if (encoding !== 'hex' && encoding !== 'base64') throw new TypeError(`encoding must be 'hex' or 'base64', not ${String(encoding)}.`);
  if (typeof signedContent !== 'function') throw new TypeError('signedContent must be a function that returns the bytes to sign.');
  const parseSignatures = options.parseSignatures ?? ((value: string) => value.split(/[\s,]+/));
  const formatSignature = options.formatSignature ?? ((signature: string) => signature);
  const deriveKey = options.deriveKey ?? ((secret: string) => Buffer.from(secret, 'utf8'));

  // A KeyObject made once per secret spares importing the key on every verification.
  const keyOf = (secret: string, which: string): KeyObject => {
    const key = deriveKey(secret);
    if (key.length === 0) throw new TypeError(`${which} gives an empty HMAC key.`);
    return createSecretKey(key);
  };
  const keys = secrets.map((secret, index) => keyOf(secret, `Secret #${index + 1} of ${secrets.length}`));
  const hmac = (key: KeyObject, content: ReturnType<HmacSchemeOptions['signedContent']>): Buffer => {
    const mac = createHmac('sha256', key);
    if (content instanceof Uint8Array) mac.update(content);
    else for (const piece of content) mac.update(piece);
    return mac.digest();
  };

  function verify(input: VerifyInput): VerifiedDelivery {
    assertRawBody(input.rawBody);
    const nowMs = input.now === undefined ? Date.now() : Number(input.now);
    if (!Number.isFinite(nowMs)) throw new TypeError('now must be a valid Date or a number of milliseconds since the epoch.');

    const sent =
      fallbacks.length === 0
        ? main
        : (headerSets.find((set) => namesOf(set).some((header) => lookup(input.headers, header) !== undefined)) ?? main);
    const timestampText = singleValue(input.headers, sent.timestampHeader);
    if (!TIMESTAMP.test(timestampText)) {
      throw new WebhookVerificationError(
        'malformed_header',
        `The ${sent.timestampHeader} header is not a unix timestamp (whole seconds, or milliseconds): got ${excerpt(timestampText)}.`,
      );
    }
    const webhookId = sent.idHeader === undefined ? undefined : singleValue(input.headers, sent.idHeader);
    const signatureValues = allValues(input.headers, sent.signatureHeader);
    const wellFormed = WELL_FORMED[encoding];
    const candidates: Buffer[] = [];
    for (const value of signatureValues) {
      for (const entry of parseSignatures(value)) if (wellFormed.test(entry)) candidates.push(Buffer.from(entry, encoding));
    }
    if (candidates.length === 0) {
      throw new WebhookVerificationError(
        'malformed_header',
        `The ${sent.signatureHeader} header holds no ${encoding} signature that the ${name} scheme can read: got ${excerpt(signatureValues.join(', '))}.`,
      );
    }

    const content = signedContent({ timestamp: timestampText, webhookId, rawBody: input.rawBody });
    let matchedSecretIndex = -1;
    for (let index = 0; index < keys.length; index++) {
      const expected = hmac(keys[index]!, content);
      for (const candidate of candidates) {
        const equal = candidate.length === expected.length && timingSafeEqual(candidate, expected);
        if (equal && matchedSecretIndex < 0) matchedSecretIndex = index;
      }
    }
    if (matchedSecretIndex < 0) {
      throw new WebhookVerificationError(
        'no_matching_signature',
        `None of the ${plural(candidates.length, 'signature')} in ${sent.signatureHeader} matches the ${plural(input.rawBody.length, 'byte')} ` +
          `of the body signed with any of the ${plural(keys.length, 'configured secret')}. ` +
          'Check that the raw request body reaches the verifier byte for byte unchanged (no JSON parsing and re-serialising, ' +
          "no body parser such as express.json() before the webhook middleware), and that the secret is this endpoint's " +
          'signing secret (GET /v1/webhooks/{id}/secret; during a rotation configure both the old and the new one).',
      );
    }

    const raw = Number(timestampText);
    const inMilliseconds = raw >= MILLISECONDS_FROM;
    const timestampMs = inMilliseconds ? raw : raw * 1000;
    const timestamp = Math.floor(timestampMs / 1000);
    // Measured in milliseconds, not whole seconds: 300.5 s is over a 300 s tolerance (so say the reference libraries).
    const ageMs = nowMs - timestampMs;
    if (ageMs > toleranceMs) {
      throw new WebhookVerificationError(
        'timestamp_too_old',
        `${timestampRead(sent.timestampHeader, timestampText, inMilliseconds)} is ${seconds(ageMs)} old, over the tolerance of ${toleranceSeconds} s. The signature is valid, so this is a replay ` +
          "of an old delivery or the sender's and this machine's clocks differ.",
      );
    }
    if (-ageMs > toleranceMs) {
      throw new WebhookVerificationError(
        'timestamp_in_future',
        `${timestampRead(sent.timestampHeader, timestampText, inMilliseconds)} is ${seconds(-ageMs)} in the future, over the tolerance of ${toleranceSeconds} s. The signature is valid, so the ` +
          "sender's and this machine's clocks differ (check NTP on this machine).",
      );
    }
    return webhookId === undefined ? { timestamp, matchedSecretIndex } : { timestamp, webhookId, matchedSecretIndex };
  }

  function sign(input: SignInput): Record<string, string> {
    const timestamp = input.timestamp ?? Math.floor(Date.now() / 1000);
    if (!Number.isSafeInteger(timestamp) || timestamp < 0) {
      throw new TypeError(`timestamp must be a whole, non-negative number of unix seconds, not ${String(timestamp)}.`);
    }
    // Read like a configured secret (trimmed), so that signing with " s " finds the configured "s".
    const secret = typeof input.secret === 'string' ? input.secret.trim() : input.secret;
    if (secret !== undefined && (typeof secret !== 'string' || secret === '')) {
      throw new TypeError('The secret passed to sign() must be a non-empty string (or left out, to sign with the first configured one).');
    }
    const index = secret === undefined ? 0 : secrets.indexOf(secret);
    const key = index >= 0 ? keys[index]! : keyOf(secret!, 'The secret passed to sign()');
    const webhookId = idHeader === undefined ? undefined : (input.webhookId ?? `msg_${randomUUID().replaceAll('-', '')}`);
    if (webhookId !== undefined && (webhookId === '' || webhookId !== webhookId.trim())) {
      throw new TypeError('webhookId must be a non-empty string without surrounding whitespace.');
    }
    const { rawBody } = input;
    if (typeof rawBody !== 'string' && !(rawBody instanceof Uint8Array)) throw new TypeError('rawBody must be a string or a Uint8Array.');
    const bytes = typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody;
    const text = String(timestamp);
    const signature = hmac(key, signedContent({ timestamp: text, webhookId, rawBody: bytes })).toString(encoding);
    return {
      ...(idHeader === undefined || webhookId === undefined ? {} : { [idHeader]: webhookId }),
      [timestampHeader]: text,
      [signatureHeader]: formatSignature(signature),
    };
  }

  return { name, headerNames, verify, sign };
}

function secretList(secrets: string | readonly string[]): string[] {
  const list = parseSecretList(secrets);
  if (list.length === 0) {
    throw new TypeError(
      "No webhook signing secret is configured: pass this endpoint's secret (GET /v1/webhooks/{id}/secret), or several during a " +
        'rotation (an array, or one string separated by commas).',
    );
  }
  return list;
}

function headerSet(names: HeaderNames, prefix: string): HeaderNames {
  const timestampHeader = headerName(names.timestampHeader, `${prefix}timestampHeader`);
  const signatureHeader = headerName(names.signatureHeader, `${prefix}signatureHeader`);
  if (names.idHeader === undefined) return { timestampHeader, signatureHeader };
  return { timestampHeader, signatureHeader, idHeader: headerName(names.idHeader, `${prefix}idHeader`) };
}

/** The lower-case names of one set, in the order `headerNames` lists them. */
function namesOf(set: HeaderNames): string[] {
  return [set.timestampHeader, set.signatureHeader, ...(set.idHeader === undefined ? [] : [set.idHeader])];
}

function headerName(value: unknown, option: string): string {
  if (typeof value !== 'string' || !HEADER_NAME.test(value))
    throw new TypeError(`${option} must be an HTTP header name, not ${String(value)}.`);
  return value.toLowerCase();
}

function lookup(headers: HeaderMap, name: string): string | readonly string[] | undefined {
  if (Object.hasOwn(headers, name)) return headers[name];
  // Names are meant to be lower-case already; a hand-built map with `X-Webhook-Signature` still works.
  const key = Object.keys(headers).find((candidate) => candidate.toLowerCase() === name);
  return key === undefined ? undefined : headers[key];
}

function allValues(headers: HeaderMap, name: string): string[] {
  const value = lookup(headers, name);
  if (typeof value === 'string') {
    const trimmed = value.trim();
    if (trimmed !== '') return [trimmed];
  }
  const values = (value === undefined ? [] : typeof value === 'string' ? [value] : [...value]).map((v) => v.trim()).filter((v) => v !== '');
  if (values.length === 0)
    throw new WebhookVerificationError(
      'missing_header',
      `The ${name} header is missing${value === undefined ? '' : ' (present but empty)'}.`,
    );
  return values;
}

/**
 * A header that must hold one value: repeats are tolerated only when identical (a proxy may duplicate one). Node
 * joins a repeated header into one value with ", ", so the parts of a joined value count as repeats too (a
 * timestamp or an id never holds a comma).
 */
function singleValue(headers: HeaderMap, name: string): string {
  // The usual case, one plain value, without building lists.
  const value = lookup(headers, name);
  if (typeof value === 'string' && !value.includes(',')) {
    const trimmed = value.trim();
    if (trimmed !== '') return trimmed;
  }
  const distinct = [...new Set(allValues(headers, name).flatMap((value) => value.split(/\s*,\s*/)))].filter((value) => value !== '');
  if (distinct.length === 0) throw new WebhookVerificationError('malformed_header', `The ${name} header holds only separators.`);
  if (distinct.length > 1)
    throw new WebhookVerificationError('malformed_header', `The ${name} header was sent ${distinct.length} times with different values.`);
  return distinct[0]!;
}

/** Attacker-controlled text for a log line: quoted (so control characters are escaped) and cut short. */
function excerpt(text: string): string {
  return JSON.stringify(text.length > 24 ? `${text.slice(0, 24)}…` : text);
}

/** How an error names the timestamp it judged. */
function timestampRead(header: string, text: string, inMilliseconds: boolean): string {
  return `The ${header} header (${text}${inMilliseconds ? ', read as milliseconds' : ''})`;
}

/** A duration for a log line: "3600 s", "300.5 s". */
function seconds(ms: number): string {
  return `${ms / 1000} s`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
