import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createHmacScheme, DEFAULT_TOLERANCE_SECONDS, type SignedParts } from '../../src/signature/index.js';
import { bytes, failure, NOW, NOW_MS, opensslHmacHex } from './support.js';

describe('createHmacScheme: a sender that signs differently', () => {
  // Base64 of HMAC(secret, body + "|" + timestamp), several signatures separated by ";".
  const custom = createHmacScheme({
    name: 'acme',
    secrets: ['custom-secret', 'older-secret'],
    timestampHeader: 'X-Acme-Time',
    signatureHeader: 'X-Acme-Hmac',
    encoding: 'base64',
    signedContent: ({ timestamp, rawBody }) => Buffer.concat([rawBody, bytes(`|${timestamp}`)]),
    parseSignatures: (value) => value.split(';'),
  });

  it('signs as openssl computes it, and verifies it', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (body) => {
        const hex = opensslHmacHex('custom-secret', Buffer.concat([body, bytes(`|${NOW}`)]));
        const headers = custom.sign({ rawBody: body, timestamp: NOW });
        expect(headers).toEqual({ 'x-acme-time': String(NOW), 'x-acme-hmac': Buffer.from(hex, 'hex').toString('base64') });
        expect(custom.verify({ headers, rawBody: body, now: NOW_MS })).toEqual({ timestamp: NOW, matchedSecretIndex: 0 });
      }),
      { numRuns: 20 },
    );
  });

  it('uses its own parser and the second secret', () => {
    const body = bytes('{"x":1}');
    const hex = opensslHmacHex('older-secret', Buffer.concat([body, bytes(`|${NOW}`)]));
    const headers = { 'x-acme-time': String(NOW), 'x-acme-hmac': `garbage;${Buffer.from(hex, 'hex').toString('base64')}` };
    expect(custom.verify({ headers, rawBody: body, now: NOW_MS }).matchedSecretIndex).toBe(1);
    expect(custom.name).toBe('acme');
    expect(custom.headerNames).toEqual(['x-acme-time', 'x-acme-hmac']);
  });

  it('has the default tolerance of 300 s', () => {
    expect(DEFAULT_TOLERANCE_SECONDS).toBe(300);
    const body = bytes('{}');
    expect(custom.verify({ headers: custom.sign({ rawBody: body, timestamp: NOW - 300 }), rawBody: body, now: NOW_MS }).timestamp).toBe(
      NOW - 300,
    );
    expect(
      failure(() => custom.verify({ headers: custom.sign({ rawBody: body, timestamp: NOW - 301 }), rawBody: body, now: NOW_MS })).reason,
    ).toBe('timestamp_too_old');
  });
});

describe('createHmacScheme: defaults and the id header', () => {
  it('by default splits on commas and whitespace, writes the signature as it is, and keys with UTF-8', () => {
    const plain = createHmacScheme({
      secrets: 'plain',
      timestampHeader: 't',
      signatureHeader: 's',
      encoding: 'hex',
      signedContent: ({ timestamp, rawBody }) => Buffer.concat([bytes(timestamp), rawBody]),
    });
    const body = bytes('hello');
    const hex = opensslHmacHex('plain', bytes(`${NOW}hello`));
    expect(plain.name).toBe('custom');
    expect(plain.sign({ rawBody: body, timestamp: NOW })).toEqual({ t: String(NOW), s: hex });
    expect(plain.verify({ headers: { t: String(NOW), s: `deadbeef, ${hex}` }, rawBody: body, now: NOW_MS }).timestamp).toBe(NOW);
  });

  it('an id header is signed, required, sent, and reported', () => {
    const seen: SignedParts[] = [];
    const withId = createHmacScheme({
      secrets: 'id-secret',
      idHeader: 'X-Delivery',
      timestampHeader: 'x-ts',
      signatureHeader: 'x-sig',
      encoding: 'hex',
      signedContent: (parts) => {
        seen.push(parts);
        return Buffer.concat([bytes(`${parts.webhookId}:${parts.timestamp}:`), parts.rawBody]);
      },
      deriveKey: (secret) => bytes(secret.toUpperCase()),
    });
    const body = bytes('{}');
    const headers = withId.sign({ rawBody: body, timestamp: NOW, webhookId: 'dlv_1' });
    expect(headers).toEqual({ 'x-delivery': 'dlv_1', 'x-ts': String(NOW), 'x-sig': opensslHmacHex('ID-SECRET', bytes(`dlv_1:${NOW}:{}`)) });
    expect(withId.headerNames).toEqual(['x-ts', 'x-sig', 'x-delivery']);
    expect(withId.verify({ headers, rawBody: body, now: NOW_MS })).toEqual({ timestamp: NOW, webhookId: 'dlv_1', matchedSecretIndex: 0 });
    expect(seen.at(-1)).toEqual({ timestamp: String(NOW), webhookId: 'dlv_1', rawBody: body });
    expect(failure(() => withId.verify({ headers: { ...headers, 'x-delivery': undefined }, rawBody: body, now: NOW_MS })).reason).toBe(
      'missing_header',
    );
    expect(() => withId.sign({ rawBody: body, webhookId: '' })).toThrow(/webhookId must be a non-empty string/);
  });

  it('a scheme without an id header passes undefined to signedContent and reports no webhookId', () => {
    const seen: SignedParts[] = [];
    const noId = createHmacScheme({
      secrets: 'x',
      timestampHeader: 'a',
      signatureHeader: 'b',
      encoding: 'hex',
      signedContent: (p) => {
        seen.push(p);
        return p.rawBody;
      },
    });
    const headers = noId.sign({ rawBody: 'x', timestamp: NOW, webhookId: 'ignored' });
    expect(Object.keys(headers)).toEqual(['a', 'b']);
    expect(noId.verify({ headers, rawBody: bytes('x'), now: NOW_MS })).not.toHaveProperty('webhookId');
    expect(seen.every((p) => p.webhookId === undefined)).toBe(true);
  });
});

describe('createHmacScheme: fallback header names', () => {
  const base = {
    secrets: 'fb-secret',
    idHeader: 'x-id',
    timestampHeader: 'x-ts',
    signatureHeader: 'x-sig',
    encoding: 'hex' as const,
    signedContent: ({ webhookId, timestamp, rawBody }: SignedParts) => Buffer.concat([bytes(`${webhookId}.${timestamp}.`), rawBody]),
  };

  it('reads a complete fallback set when none of the main headers is present', () => {
    const scheme = createHmacScheme({
      ...base,
      fallbackHeaders: [{ idHeader: 'Y-Id', timestampHeader: 'y-ts', signatureHeader: 'y-sig' }],
    });
    expect(scheme.headerNames).toEqual(['x-ts', 'x-sig', 'x-id', 'y-ts', 'y-sig', 'y-id']);
    const signed = scheme.sign({ rawBody: '{}', webhookId: 'd1', timestamp: NOW });
    expect(Object.keys(signed)).toEqual(['x-id', 'x-ts', 'x-sig']);
    const renamed = { 'y-id': signed['x-id']!, 'y-ts': signed['x-ts']!, 'y-sig': signed['x-sig']! };
    expect(scheme.verify({ headers: renamed, rawBody: bytes('{}'), now: NOW_MS })).toEqual({
      timestamp: NOW,
      webhookId: 'd1',
      matchedSecretIndex: 0,
    });
    expect(signed['x-sig']).toBe(opensslHmacHex('fb-secret', bytes(`d1.${NOW}.{}`)));
  });

  it('refuses fallback sets that do not match the main set, or reuse a name', () => {
    expect(() => createHmacScheme({ ...base, fallbackHeaders: [{ timestampHeader: 'y-ts', signatureHeader: 'y-sig' }] })).toThrow(
      new TypeError('fallbackHeaders[0] must have an idHeader exactly when the scheme has one.'),
    );
    expect(() =>
      createHmacScheme({ ...base, fallbackHeaders: [{ idHeader: 'y-id', timestampHeader: 'X-TS', signatureHeader: 'y-sig' }] }),
    ).toThrow(/header names must differ/);
    expect(() =>
      createHmacScheme({ ...base, fallbackHeaders: [{ idHeader: 'y id', timestampHeader: 'y-ts', signatureHeader: 'y-sig' }] }),
    ).toThrow(new TypeError('fallbackHeaders[0].idHeader must be an HTTP header name, not y id.'));
    expect(() => createHmacScheme({ ...base, fallbackHeaders: {} as [] })).toThrow(TypeError);
  });
});
