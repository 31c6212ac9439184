import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createDefaultScheme } from '../../src/signature/index.js';
import { bytes, failure, NOW, NOW_MS, opensslHmacHex } from './support.js';

const headersFor = (timestamp: string | number, signature: string | string[]) => ({
  'x-webhook-timestamp': String(timestamp),
  'x-webhook-signature': signature,
});

describe('the default scheme: known answers', () => {
  // Written down once, computed with openssl (never with this code), e.g.:
  //   printf '%s' '1700000000.{"eventId":"evt_1","eventType":"INVOICE_PAID","data":{}}' | openssl dgst -sha256 -hmac 'whsec-test-secret'
  //   printf '1700000000.\xc3\x28\xa0\xa1\x00\xff' | openssl dgst -sha256 -hmac 'binary-secret'
  const vectors = [
    {
      secret: 'whsec-test-secret',
      timestamp: '1700000000',
      body: bytes('{"eventId":"evt_1","eventType":"INVOICE_PAID","data":{}}'),
      hex: '7a94fd39270de0f8be0207fb4c925259f8c372d4f636fe9f05980e858c0f93fe',
    },
    {
      secret: 'rotation-secret-2',
      timestamp: '1731234567',
      body: bytes('{}'),
      hex: '7e5c0e72b0b30dd53031bbec7da869543267e0cdad734b6fb658fa4c5df4a41a',
    },
    // A non-ASCII key (its UTF-8 bytes) and a non-ASCII body.
    {
      secret: 'ключ',
      timestamp: '1700000000',
      body: bytes('héllo €'),
      hex: '4af7a19585ea72a3a9adb60646a31fcf8023ec47aa8d732818120dec1eba74a1',
    },
    // A body that is not UTF-8 at all: decoding it to a string would change the bytes.
    {
      secret: 'binary-secret',
      timestamp: '1700000000',
      body: Buffer.from([0xc3, 0x28, 0xa0, 0xa1, 0x00, 0xff]),
      hex: 'a6d1dd9e6b9efd742d51a7d3207ca982da80f2ce9c21fc6595185e5c8ab9a7ff',
    },
    // A millisecond timestamp: the signed string holds the header text verbatim.
    {
      secret: 'ms-secret',
      timestamp: '1700000000123',
      body: Buffer.concat([Buffer.from([0x00, 0xff, 0xfe]), bytes('{"a":1}'), Buffer.from([0x80])]),
      hex: '5b3b37660db0789d6b4a21d9cffb271d9de4c16dced4a506fb07a651ecb3980c',
    },
  ];

  it.each(vectors)('verifies and signs the fixed vector for $secret at $timestamp', ({ secret, timestamp, body, hex }) => {
    const scheme = createDefaultScheme({ secrets: secret });
    expect(opensslHmacHex(secret, Buffer.concat([bytes(`${timestamp}.`), body]))).toBe(hex);
    const seconds = timestamp.length >= 13 ? Math.floor(Number(timestamp) / 1000) : Number(timestamp);
    for (const signature of [`v1=${hex}`, hex]) {
      expect(scheme.verify({ headers: headersFor(timestamp, signature), rawBody: body, now: seconds * 1000 })).toEqual({
        timestamp: seconds,
        matchedSecretIndex: 0,
      });
    }
    expect(scheme.sign({ rawBody: body, timestamp: Number(timestamp) })).toEqual(headersFor(timestamp, `v1=${hex}`));
  });

  it('agrees with openssl over random bodies (any bytes), secrets and timestamps', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 512 }),
        // Secrets are read trimmed (parseSecretList, tested in failures.test.ts), so the property draws secrets without
        // surrounding white space: the key openssl gets is then the same text.
        fc.string({ minLength: 1, maxLength: 40, unit: 'grapheme' }).filter((s) => !s.includes('\0') && s !== '' && s === s.trim()),
        fc.integer({ min: -300, max: 300 }),
        (body, secret, offset) => {
          const timestamp = NOW + offset;
          const hex = opensslHmacHex(secret, Buffer.concat([bytes(`${timestamp}.`), body]));
          const scheme = createDefaultScheme({ secrets: [secret] });
          expect(scheme.sign({ rawBody: body, timestamp })['x-webhook-signature']).toBe(`v1=${hex}`);
          expect(scheme.verify({ headers: headersFor(timestamp, `v1=${hex}`), rawBody: body, now: NOW_MS }).timestamp).toBe(timestamp);
        },
      ),
      { numRuns: 40 },
    );
  });

  it('signs a string body as its UTF-8 bytes, like the same bytes given directly', () => {
    const scheme = createDefaultScheme({ secrets: 'k' });
    const text = '{"name":"Zoë 😀"}';
    expect(scheme.sign({ rawBody: text, timestamp: NOW })).toEqual(scheme.sign({ rawBody: bytes(text), timestamp: NOW }));
  });
});

/** Flips bit `bit` (counted over the whole buffer) of a copy of `data`. */
function flipBit(data: Uint8Array, bit: number): Buffer {
  const copy = Buffer.from(data);
  copy[bit >> 3]! ^= 1 << (bit & 7);
  return copy;
}

/**
 * What the contract (docs/signatures.md) says a signature header does: entries split on commas/whitespace, an optional
 * `v1=` prefix, hex. Used as a model to predict the reason a tampered header fails with.
 */
function modelReason(header: string, validHex: string): 'ok' | 'malformed_header' | 'no_matching_signature' {
  const hexEntries = header
    .split(/[\s,]+/)
    .map((entry) => entry.replace(/^v1=/, ''))
    .filter((entry) => /^(?:[0-9a-f]{2})+$/.test(entry));
  if (hexEntries.length === 0) return 'malformed_header';
  return hexEntries.some((entry) => entry === validHex) ? 'ok' : 'no_matching_signature';
}

describe('the default scheme: properties', () => {
  const scheme = createDefaultScheme({ secrets: ['prop-secret'] });
  const verifyAtNow = (headers: Record<string, string | string[]>, rawBody: Uint8Array) => scheme.verify({ headers, rawBody, now: NOW_MS });

  it('sign then verify round-trips for any bytes, including bytes that are not UTF-8', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 4096 }), fc.integer({ min: -300, max: 300 }), (body, offset) => {
        const headers = scheme.sign({ rawBody: body, timestamp: NOW + offset });
        expect(verifyAtNow(headers, body)).toEqual({ timestamp: NOW + offset, matchedSecretIndex: 0 });
      }),
    );
  });

  it('flipping any single bit of the body fails with no_matching_signature', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 1, maxLength: 256 }), fc.nat(), (body, seed) => {
        const headers = scheme.sign({ rawBody: body, timestamp: NOW });
        expect(failure(() => verifyAtNow(headers, flipBit(body, seed % (body.length * 8)))).reason).toBe('no_matching_signature');
      }),
    );
  });

  it('flipping any single bit of the timestamp header fails: no_matching_signature if still digits, else malformed_header', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.integer({ min: -300, max: 300 }), fc.nat(), (body, offset, seed) => {
        const headers = scheme.sign({ rawBody: body, timestamp: NOW + offset });
        const text = Buffer.from(headers['x-webhook-timestamp']!, 'latin1');
        const tampered = flipBit(text, seed % (text.length * 8)).toString('latin1');
        // Header values arrive trimmed of surrounding whitespace, so a digit flipped to a trailing space drops out.
        const expected = /^\d+$/.test(tampered.trim()) ? 'no_matching_signature' : 'malformed_header';
        expect(failure(() => verifyAtNow({ ...headers, 'x-webhook-timestamp': tampered }, body)).reason).toBe(expected);
      }),
    );
  });

  it('flipping any single bit of the signature bytes fails with no_matching_signature', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.integer({ min: 0, max: 255 }), (body, bit) => {
        const hex = scheme.sign({ rawBody: body, timestamp: NOW })['x-webhook-signature']!.slice('v1='.length);
        const tampered = flipBit(Buffer.from(hex, 'hex'), bit).toString('hex');
        expect(failure(() => verifyAtNow(headersFor(NOW, `v1=${tampered}`), body)).reason).toBe('no_matching_signature');
      }),
    );
  });

  it('flipping any single bit of the signature header text fails, with the reason the contract predicts', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(), (body, seed) => {
        const header = scheme.sign({ rawBody: body, timestamp: NOW })['x-webhook-signature']!;
        const validHex = header.slice('v1='.length);
        const text = Buffer.from(header, 'latin1');
        const tampered = flipBit(text, seed % (text.length * 8)).toString('latin1');
        const expected = modelReason(tampered, validHex);
        expect(expected).not.toBe('ok');
        expect(failure(() => verifyAtNow(headersFor(NOW, tampered), body)).reason).toBe(expected);
      }),
      { numRuns: 1000 },
    );
  });

  it.each([
    [-299, null],
    [-300, null],
    [299, null],
    [300, null],
    [-301, 'timestamp_too_old'],
    [301, 'timestamp_in_future'],
  ] as const)('a timestamp %i s from now: %s', (offset, reason) => {
    const headers = scheme.sign({ rawBody: '{}', timestamp: NOW + offset });
    if (reason === null) expect(verifyAtNow(headers, bytes('{}')).timestamp).toBe(NOW + offset);
    else expect(failure(() => verifyAtNow(headers, bytes('{}'))).reason).toBe(reason);
  });

  it('any timestamp within the tolerance passes and any outside fails, measured to the millisecond of now', () => {
    fc.assert(
      fc.property(fc.integer({ min: -5000, max: 5000 }), fc.integer({ min: 0, max: 999 }), (offset, ms) => {
        const headers = scheme.sign({ rawBody: 'x', timestamp: NOW + offset });
        const verify = () => scheme.verify({ headers, rawBody: bytes('x'), now: NOW_MS + ms });
        const ageMs = ms - offset * 1000;
        if (Math.abs(ageMs) <= 300_000) expect(verify().timestamp).toBe(NOW + offset);
        else expect(failure(verify).reason).toBe(ageMs > 0 ? 'timestamp_too_old' : 'timestamp_in_future');
      }),
    );
    // The edges, which random draws rarely hit: 300 s old passes, 300.001 s and 300.5 s old do not; 299.5 s ahead passes.
    const edge = scheme.sign({ rawBody: 'x', timestamp: NOW - 300 });
    expect(scheme.verify({ headers: edge, rawBody: bytes('x'), now: NOW_MS }).timestamp).toBe(NOW - 300);
    for (const [ms, age] of [
      [1, '300.001'],
      [500, '300.5'],
      [999, '300.999'],
    ] as const) {
      const error = failure(() => scheme.verify({ headers: edge, rawBody: bytes('x'), now: NOW_MS + ms }));
      expect(error.reason).toBe('timestamp_too_old');
      expect(error.message).toContain(`is ${age} s old, over the tolerance of 300 s`);
    }
    const ahead = scheme.sign({ rawBody: 'x', timestamp: NOW + 300 });
    expect(scheme.verify({ headers: ahead, rawBody: bytes('x'), now: NOW_MS + 500 }).timestamp).toBe(NOW + 300);
  });

  it('a delivery 300.5 s old is refused and one 299.5 s old accepted, as the Go, Python and C# reference libraries do', () => {
    const headers = scheme.sign({ rawBody: 'x', timestamp: NOW });
    expect(failure(() => scheme.verify({ headers, rawBody: bytes('x'), now: NOW_MS + 300_500 })).reason).toBe('timestamp_too_old');
    expect(scheme.verify({ headers, rawBody: bytes('x'), now: NOW_MS + 299_500 }).timestamp).toBe(NOW);
    expect(failure(() => scheme.verify({ headers, rawBody: bytes('x'), now: NOW_MS - 300_500 })).reason).toBe('timestamp_in_future');
    expect(scheme.verify({ headers, rawBody: bytes('x'), now: NOW_MS - 299_500 }).timestamp).toBe(NOW);
  });

  it('accepts now as a Date', () => {
    const headers = scheme.sign({ rawBody: 'x', timestamp: NOW });
    expect(scheme.verify({ headers, rawBody: bytes('x'), now: new Date(NOW_MS) }).timestamp).toBe(NOW);
    expect(failure(() => scheme.verify({ headers, rawBody: bytes('x'), now: new Date(NOW_MS + 301_000) })).reason).toBe(
      'timestamp_too_old',
    );
  });

  it('a configurable tolerance, with the staleness in the message', () => {
    const strict = createDefaultScheme({ secrets: ['prop-secret'], toleranceSeconds: 10 });
    expect(
      strict.verify({ headers: strict.sign({ rawBody: '{}', timestamp: NOW - 10 }), rawBody: bytes('{}'), now: NOW_MS }).timestamp,
    ).toBe(NOW - 10);
    const error = failure(() =>
      strict.verify({ headers: strict.sign({ rawBody: '{}', timestamp: NOW - 11 }), rawBody: bytes('{}'), now: NOW_MS }),
    );
    expect(error.reason).toBe('timestamp_too_old');
    expect(error.message).toMatch(/11 s old, over the tolerance of 10 s/);
  });

  it('one valid signature among garbage entries passes, in one header value or repeated headers', () => {
    const garbage = fc.oneof(
      fc.stringMatching(/^[0-9a-f]{64}$/).map((hex) => `v1=${hex}`),
      fc.stringMatching(/^[0-9a-f]{2,80}$/),
      fc.stringMatching(/^v0=[0-9a-f]{64}$/),
      fc.stringMatching(/^[^\s,]{1,30}$/),
    );
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 64 }),
        fc.array(garbage, { maxLength: 6 }),
        fc.nat(),
        fc.constantFrom(',', ' ', ', ', '\t', ' , '),
        fc.boolean(),
        fc.boolean(),
        (body, junk, position, separator, repeated, prefixed) => {
          const valid = scheme.sign({ rawBody: body, timestamp: NOW })['x-webhook-signature']!;
          const entries = [...junk];
          entries.splice(position % (junk.length + 1), 0, prefixed ? valid : valid.slice('v1='.length));
          const header = repeated ? entries : entries.join(separator);
          expect(verifyAtNow(headersFor(NOW, header), body).matchedSecretIndex).toBe(0);
        },
      ),
    );
  });

  it('with several secrets, any one matches and its index is reported', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(
          // Each secret is also given alone as a string below, where a comma would split it (a rotation), so none holds one.
          fc.string({ minLength: 1, maxLength: 24 }).filter((s) => s !== '' && s === s.trim() && !s.includes(',')),
          { minLength: 2, maxLength: 5 },
        ),
        fc.nat(),
        fc.uint8Array({ maxLength: 64 }),
        (secrets, seed, body) => {
          const index = seed % secrets.length;
          const rotating = createDefaultScheme({ secrets });
          const headers = createDefaultScheme({ secrets: secrets[index]! }).sign({ rawBody: body, timestamp: NOW });
          expect(rotating.verify({ headers, rawBody: body, now: NOW_MS }).matchedSecretIndex).toBe(index);
          expect(rotating.sign({ rawBody: body, timestamp: NOW, secret: secrets[index]! })).toEqual(headers);
        },
      ),
    );
  });

  it('the second secret matches when the sender still uses the old one', () => {
    const body = bytes('{"eventId":"evt_r"}');
    const rotating = createDefaultScheme({ secrets: ['new-secret', 'old-secret'] });
    const old = createDefaultScheme({ secrets: 'old-secret' }).sign({ rawBody: body, timestamp: NOW });
    expect(rotating.verify({ headers: old, rawBody: body, now: NOW_MS })).toEqual({ timestamp: NOW, matchedSecretIndex: 1 });
    const both = createDefaultScheme({ secrets: 'new-secret' }).sign({ rawBody: body, timestamp: NOW })['x-webhook-signature']!;
    expect(
      rotating.verify({ headers: headersFor(NOW, `${old['x-webhook-signature']},${both}`), rawBody: body, now: NOW_MS }).matchedSecretIndex,
    ).toBe(0);
  });
});

describe('the default scheme: timestamps in milliseconds', () => {
  const scheme = createDefaultScheme({ secrets: 'ms-secret' });
  const body = bytes('{"eventId":"evt_ms"}');

  it('a value of 13 digits is milliseconds; the signature covers the header text as sent (checked with openssl)', () => {
    const ms = String(NOW_MS + 456);
    const hex = opensslHmacHex('ms-secret', Buffer.concat([bytes(`${ms}.`), body]));
    expect(scheme.verify({ headers: headersFor(ms, hex), rawBody: body, now: NOW_MS })).toEqual({ timestamp: NOW, matchedSecretIndex: 0 });
    // Signing the seconds instead of the header text would not match.
    const secondsHex = opensslHmacHex('ms-secret', Buffer.concat([bytes(`${NOW}.`), body]));
    expect(failure(() => scheme.verify({ headers: headersFor(ms, secondsHex), rawBody: body, now: NOW_MS })).reason).toBe(
      'no_matching_signature',
    );
  });

  it('millisecond timestamps get the same tolerance, and the message says how the value was read', () => {
    expect(
      scheme.verify({ headers: scheme.sign({ rawBody: body, timestamp: NOW_MS - 300_000 }), rawBody: body, now: NOW_MS }).timestamp,
    ).toBe(NOW - 300);
    const old = failure(() =>
      scheme.verify({ headers: scheme.sign({ rawBody: body, timestamp: NOW_MS - 301_000 }), rawBody: body, now: NOW_MS }),
    );
    expect(old.reason).toBe('timestamp_too_old');
    expect(old.message).toMatch(/read as milliseconds\) is 301 s old/);
    const future = failure(() =>
      scheme.verify({ headers: scheme.sign({ rawBody: body, timestamp: NOW_MS + 301_000 }), rawBody: body, now: NOW_MS }),
    );
    expect(future.reason).toBe('timestamp_in_future');
  });

  it('12 digits are still seconds (far in the future), 13 digits are milliseconds', () => {
    const twelve = scheme.sign({ rawBody: body, timestamp: 999_999_999_999 });
    expect(failure(() => scheme.verify({ headers: twelve, rawBody: body, now: NOW_MS })).reason).toBe('timestamp_in_future');
    const thirteen = scheme.sign({ rawBody: body, timestamp: 1_000_000_000_000 });
    expect(scheme.verify({ headers: thirteen, rawBody: body, now: 1_000_000_000_000 }).timestamp).toBe(1_000_000_000);
  });
});

describe('the default scheme: headers', () => {
  const scheme = createDefaultScheme({ secrets: 'hdr-secret' });
  const body = bytes('{}');
  const signed = scheme.sign({ rawBody: body, timestamp: NOW });

  it('names the headers it reads, lower-case', () => {
    expect(scheme.name).toBe('default');
    expect(scheme.headerNames).toEqual(['x-webhook-timestamp', 'x-webhook-signature']);
    expect(Object.keys(signed).sort()).toEqual(['x-webhook-signature', 'x-webhook-timestamp']);
    expect(signed['x-webhook-signature']).toMatch(/^v1=[0-9a-f]{64}$/);
  });

  it('refuses upper-case hex (the contract says lower case), and ignores entries of another version', () => {
    const hex = signed['x-webhook-signature']!.slice(3);
    expect(failure(() => scheme.verify({ headers: headersFor(NOW, `v1=${hex.toUpperCase()}`), rawBody: body, now: NOW_MS })).reason).toBe(
      'malformed_header',
    );
    expect(failure(() => scheme.verify({ headers: headersFor(NOW, `v0=${hex}`), rawBody: body, now: NOW_MS })).reason).toBe(
      'malformed_header',
    );
  });

  it('custom header names, given in any case', () => {
    const custom = createDefaultScheme({ secrets: 's', timestampHeader: 'X-Ts', signatureHeader: 'X-Sig' });
    expect(custom.headerNames).toEqual(['x-ts', 'x-sig']);
    const headers = custom.sign({ rawBody: body, timestamp: NOW });
    expect(Object.keys(headers).sort()).toEqual(['x-sig', 'x-ts']);
    expect(custom.verify({ headers, rawBody: body, now: NOW_MS }).timestamp).toBe(NOW);
  });

  it('finds headers in a hand-built map with mixed-case names', () => {
    const headers = { 'X-Webhook-Timestamp': signed['x-webhook-timestamp'], 'X-Webhook-Signature': signed['x-webhook-signature'] };
    expect(scheme.verify({ headers, rawBody: body, now: NOW_MS }).timestamp).toBe(NOW);
  });

  it('a repeated timestamp header passes when the copies agree and is malformed when they differ', () => {
    const ts = signed['x-webhook-timestamp']!;
    expect(scheme.verify({ headers: { ...signed, 'x-webhook-timestamp': [ts, ts] }, rawBody: body, now: NOW_MS }).timestamp).toBe(NOW);
    const error = failure(() =>
      scheme.verify({ headers: { ...signed, 'x-webhook-timestamp': [ts, String(NOW + 1)] }, rawBody: body, now: NOW_MS }),
    );
    expect(error.reason).toBe('malformed_header');
    expect(error.message).toMatch(/sent 2 times with different values/);
  });

  it('takes a Buffer or any Uint8Array as the body', () => {
    const view = new Uint8Array(new ArrayBuffer(8), 2, 2);
    view.set([0x7b, 0x7d]);
    expect(scheme.verify({ headers: signed, rawBody: view, now: NOW_MS }).timestamp).toBe(NOW);
  });
});
