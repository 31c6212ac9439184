import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { assertRawBody, createDefaultScheme, createHmacScheme, WebhookVerificationError, type VerificationFailureReason } from '../../src/signature/index.js';

const NOW = 1_700_000_000;
const nowMs = NOW * 1000;
const dir = mkdtempSync(join(tmpdir(), 'payhooks-sig-'));

/** HMAC-SHA256 hex computed by openssl, independently of the code under test. */
function opensslHmac(secret: string, signed: Buffer): string {
  const file = join(dir, 'signed.bin');
  writeFileSync(file, signed);
  return execFileSync('openssl', ['dgst', '-sha256', '-hmac', secret, file], { encoding: 'utf8' }).trim().split(' ').pop()!;
}

function failure(fn: () => unknown): WebhookVerificationError {
  try {
    fn();
  } catch (err) {
    if (err instanceof WebhookVerificationError) return err;
    throw err;
  }
  throw new Error('expected a verification failure');
}

const headersFor = (timestamp: string | number, signature: string) => ({ 'x-webhook-timestamp': String(timestamp), 'x-webhook-signature': signature });

describe('the default scheme: known answers', () => {
  // Computed once with: printf '%s' '<ts>.<body>' | openssl dgst -sha256 -hmac '<secret>'
  const vectors = [
    { secret: 'whsec-test-secret', timestamp: 1700000000, body: '{"eventId":"evt_1","eventType":"INVOICE_PAID","data":{}}', hex: '7a94fd39270de0f8be0207fb4c925259f8c372d4f636fe9f05980e858c0f93fe' },
    { secret: 'rotation-secret-2', timestamp: 1731234567, body: '{}', hex: '7e5c0e72b0b30dd53031bbec7da869543267e0cdad734b6fb658fa4c5df4a41a' },
    { secret: 'ключ', timestamp: 1700000000, body: 'héllo €', hex: '4af7a19585ea72a3a9adb60646a31fcf8023ec47aa8d732818120dec1eba74a1' },
  ];

  it.each(vectors)('verifies and signs the fixed vector for $secret', ({ secret, timestamp, body, hex }) => {
    const scheme = createDefaultScheme({ secrets: [secret] });
    const rawBody = Buffer.from(body, 'utf8');
    expect(scheme.verify({ headers: headersFor(timestamp, `v1=${hex}`), rawBody, now: timestamp * 1000 }).timestamp).toBe(timestamp);
    expect(scheme.verify({ headers: headersFor(timestamp, hex), rawBody, now: timestamp * 1000 }).matchedSecretIndex).toBe(0);
    expect(scheme.sign({ rawBody: body, timestamp })).toEqual(headersFor(timestamp, `v1=${hex}`));
  });

  it('matches openssl over random bodies, including bytes that are not UTF-8', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !s.includes('\0')), (bytes, secret) => {
        const body = Buffer.from(bytes);
        const expected = opensslHmac(secret, Buffer.concat([Buffer.from(`${NOW}.`), body]));
        const scheme = createDefaultScheme({ secrets: [secret] });
        expect(scheme.sign({ rawBody: body, timestamp: NOW })['x-webhook-signature']).toBe(`v1=${expected}`);
        expect(scheme.verify({ headers: headersFor(NOW, `v1=${expected}`), rawBody: body, now: nowMs }).timestamp).toBe(NOW);
      }),
      { numRuns: 25 },
    );
  });
});

describe('the default scheme: properties', () => {
  const scheme = createDefaultScheme({ secrets: ['prop-secret'] });

  it('sign then verify round-trips for any bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 2048 }), (bytes) => {
        const headers = scheme.sign({ rawBody: bytes, timestamp: NOW });
        expect(scheme.verify({ headers, rawBody: bytes, now: nowMs }).timestamp).toBe(NOW);
      }),
    );
  });

  it('flipping any single bit of the body fails with no_matching_signature', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 256 }), fc.nat(), (bytes, bitSeed) => {
        const headers = scheme.sign({ rawBody: bytes, timestamp: NOW });
        const bit = bitSeed % (bytes.length * 8);
        const tampered = Uint8Array.from(bytes);
        tampered[bit >> 3]! ^= 1 << (bit & 7);
        expect(failure(() => scheme.verify({ headers, rawBody: tampered, now: nowMs })).reason).toBe('no_matching_signature');
      }),
    );
  });

  it('flipping any single bit of the signature or the timestamp fails', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(), fc.boolean(), (bytes, bitSeed, inTimestamp) => {
        const headers = scheme.sign({ rawBody: bytes, timestamp: NOW });
        const name = inTimestamp ? 'x-webhook-timestamp' : 'x-webhook-signature';
        const value = Buffer.from(headers[name]!, 'latin1');
        const bit = bitSeed % (value.length * 8);
        value[bit >> 3]! ^= 1 << (bit & 7);
        const changed = { ...headers, [name]: value.toString('latin1') };
        const reason = failure(() => scheme.verify({ headers: changed, rawBody: bytes, now: nowMs })).reason;
        expect(['no_matching_signature', 'malformed_header', 'timestamp_too_old', 'timestamp_in_future', 'missing_header']).toContain(reason);
      }),
    );
  });

  it.each([
    [-300, null],
    [-299, null],
    [300, null],
    [299, null],
    [-301, 'timestamp_too_old'],
    [301, 'timestamp_in_future'],
  ] as const)('a timestamp %i s from now is %s', (offset, reason) => {
    const headers = scheme.sign({ rawBody: '{}', timestamp: NOW + offset });
    if (reason === null) expect(scheme.verify({ headers, rawBody: Buffer.from('{}'), now: nowMs }).timestamp).toBe(NOW + offset);
    else expect(failure(() => scheme.verify({ headers, rawBody: Buffer.from('{}'), now: nowMs })).reason).toBe(reason);
  });

  it('any timestamp within the tolerance passes and any outside fails', () => {
    fc.assert(
      fc.property(fc.integer({ min: -5000, max: 5000 }), (offset) => {
        const headers = scheme.sign({ rawBody: 'x', timestamp: NOW + offset });
        const verify = () => scheme.verify({ headers, rawBody: Buffer.from('x'), now: nowMs });
        if (Math.abs(offset) <= 300) expect(verify().timestamp).toBe(NOW + offset);
        else expect(failure(verify).reason).toBe(offset < 0 ? 'timestamp_too_old' : 'timestamp_in_future');
      }),
    );
  });

  it('a configurable tolerance', () => {
    const strict = createDefaultScheme({ secrets: ['prop-secret'], toleranceSeconds: 10 });
    const headers = strict.sign({ rawBody: '{}', timestamp: NOW - 11 });
    expect(failure(() => strict.verify({ headers, rawBody: Buffer.from('{}'), now: nowMs })).message).toMatch(/11 s old, over the tolerance of 10 s/);
  });
});

describe('the default scheme: headers, rotation, failures', () => {
  const body = Buffer.from('{"eventId":"evt_r"}');
  const oldScheme = createDefaultScheme({ secrets: ['old-secret'] });
  const newScheme = createDefaultScheme({ secrets: ['new-secret'] });
  const rotating = createDefaultScheme({ secrets: ['new-secret', 'old-secret'] });

  it('accepts any configured secret during a rotation, and says which matched', () => {
    expect(rotating.verify({ headers: newScheme.sign({ rawBody: body }), rawBody: body }).matchedSecretIndex).toBe(0);
    expect(rotating.verify({ headers: oldScheme.sign({ rawBody: body }), rawBody: body }).matchedSecretIndex).toBe(1);
  });

  it('accepts several signatures in one header, separated by commas or spaces, one valid among garbage', () => {
    const good = newScheme.sign({ rawBody: body, timestamp: NOW })['x-webhook-signature']!;
    const other = oldScheme.sign({ rawBody: body, timestamp: NOW })['x-webhook-signature']!;
    for (const header of [`${other},${good}`, `v1=zzzz ${good}`, `  ${other}  ${good.slice(3)} `]) {
      expect(rotating.verify({ headers: headersFor(NOW, header), rawBody: body, now: nowMs }).timestamp).toBe(NOW);
    }
  });

  it('recognises millisecond timestamps, signing the header text as sent', () => {
    const ms = String(nowMs);
    const hex = opensslHmac('new-secret', Buffer.concat([Buffer.from(`${ms}.`), body]));
    expect(newScheme.verify({ headers: headersFor(ms, hex), rawBody: body, now: nowMs }).timestamp).toBe(NOW);
  });

  const cases: [string, Record<string, string>, VerificationFailureReason][] = [
    ['no timestamp header', { 'x-webhook-signature': 'v1=00' }, 'missing_header'],
    ['no signature header', { 'x-webhook-timestamp': String(NOW) }, 'missing_header'],
    ['a timestamp that is not a number', headersFor('yesterday', 'v1=00'), 'malformed_header'],
    ['a signature that is not hex', headersFor(NOW, 'v1=not-hex!'), 'malformed_header'],
    ['upper-case hex (the contract says lower case)', headersFor(NOW, `v1=${'AB'.repeat(32)}`), 'malformed_header'],
    ['a valid-looking but wrong signature', headersFor(NOW, `v1=${'ab'.repeat(32)}`), 'no_matching_signature'],
  ];
  it.each(cases)('%s fails with %s, and no message holds the secret', (_name, headers, reason) => {
    const error = failure(() => newScheme.verify({ headers, rawBody: body, now: nowMs }));
    expect(error.reason).toBe(reason);
    expect(error.message).not.toContain('new-secret');
    expect(error.publicMessage).toBe('Invalid webhook signature.');
  });

  it('explains what to check when no signature matches, without revealing the expected one', () => {
    const expected = newScheme.sign({ rawBody: body, timestamp: NOW })['x-webhook-signature']!.slice(3);
    const error = failure(() => newScheme.verify({ headers: oldScheme.sign({ rawBody: body, timestamp: NOW }), rawBody: body, now: nowMs }));
    expect(error.message).toMatch(/raw request body reaches the verifier byte for byte/);
    expect(error.message).toMatch(/this endpoint's signing secret/);
    expect(error.message).not.toContain(expected);
  });

  it('refuses a parsed body with body_already_parsed', () => {
    expect(failure(() => assertRawBody({ eventId: 'x' })).reason).toBe('body_already_parsed');
    expect(failure(() => assertRawBody('{"eventId":"x"}')).message).toMatch(/express\.raw\(\)/);
    expect(() => assertRawBody(Buffer.from('{}'))).not.toThrow();
  });

  it('validates its options', () => {
    expect(() => createDefaultScheme({ secrets: [] })).toThrow(/at least one secret/);
    expect(() => createDefaultScheme({ secrets: [''] })).toThrow(/non-empty string/);
    expect(() => createDefaultScheme({ secrets: ['s'], toleranceSeconds: 0 })).toThrow(/positive number/);
  });

  it('custom header names', () => {
    const custom = createDefaultScheme({ secrets: ['s'], timestampHeader: 'X-Ts', signatureHeader: 'X-Sig' });
    const headers = custom.sign({ rawBody: body, timestamp: NOW });
    expect(Object.keys(headers).sort()).toEqual(['x-sig', 'x-ts']);
    expect(custom.verify({ headers, rawBody: body, now: nowMs }).timestamp).toBe(NOW);
  });

  it('a custom scheme: other signed content and base64', () => {
    const custom = createHmacScheme({
      secrets: ['custom-secret'],
      timestampHeader: 'x-time',
      signatureHeader: 'x-hmac',
      encoding: 'base64',
      signedContent: ({ timestamp, rawBody }) => Buffer.concat([rawBody, Buffer.from(`|${timestamp}`)]),
      parseSignatures: (header) => header.split(';'),
      formatSignature: (signature) => signature,
    });
    const expectedHex = opensslHmac('custom-secret', Buffer.concat([body, Buffer.from(`|${NOW}`)]));
    const headers = custom.sign({ rawBody: body, timestamp: NOW });
    expect(headers['x-hmac']).toBe(Buffer.from(expectedHex, 'hex').toString('base64'));
    expect(custom.verify({ headers, rawBody: body, now: nowMs }).timestamp).toBe(NOW);
  });
});
