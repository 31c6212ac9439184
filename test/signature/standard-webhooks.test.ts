import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { createStandardWebhooksScheme } from '../../src/signature/index.js';
import { bytes, failure, NOW, NOW_MS } from './support.js';

// The reference package is the oracle here: it signs and verifies with its own HMAC and base64 code.
const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OTHER = `whsec_${Buffer.from('another secret of 32 bytes......').toString('base64')}`;
const nowSeconds = () => Math.floor(Date.now() / 1000);
const msgId = fc.stringMatching(/^msg_[A-Za-z0-9_-]{1,30}$/);

describe('the Standard Webhooks preset against the standardwebhooks package', () => {
  const scheme = createStandardWebhooksScheme({ secrets: SECRET });
  const reference = new Webhook(SECRET);

  it('names its headers: webhook-* first, then the svix-* names it also reads', () => {
    expect(scheme.name).toBe('standard-webhooks');
    expect(scheme.headerNames).toEqual([
      'webhook-timestamp',
      'webhook-signature',
      'webhook-id',
      'svix-timestamp',
      'svix-signature',
      'svix-id',
    ]);
  });

  it('verifies what the package signs', () => {
    fc.assert(
      fc.property(fc.json(), msgId, fc.integer({ min: -300, max: 300 }), (payload, id, offset) => {
        const seconds = NOW + offset;
        const headers = {
          'webhook-id': id,
          'webhook-timestamp': String(seconds),
          'webhook-signature': reference.sign(id, new Date(seconds * 1000), payload),
        };
        expect(scheme.verify({ headers, rawBody: bytes(payload), now: NOW_MS })).toEqual({
          timestamp: seconds,
          webhookId: id,
          matchedSecretIndex: 0,
        });
      }),
      { numRuns: 100 },
    );
  });

  it('signs exactly what the package signs', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme', maxLength: 200 }), msgId, (payload, id) => {
        const ours = scheme.sign({ rawBody: payload, webhookId: id, timestamp: NOW });
        expect(ours).toEqual({
          'webhook-id': id,
          'webhook-timestamp': String(NOW),
          'webhook-signature': reference.sign(id, new Date(NOW_MS), payload),
        });
      }),
      { numRuns: 100 },
    );
  });

  it('is verified by the package', () => {
    fc.assert(
      fc.property(fc.json(), (payload) => {
        const headers = scheme.sign({ rawBody: payload });
        expect(headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
        expect(reference.verify(payload, headers)).toEqual(JSON.parse(payload));
      }),
      { numRuns: 100 },
    );
  });

  it('rotation: the package signing with either secret verifies, and the package verifies what we sign with each', () => {
    const rotating = createStandardWebhooksScheme({ secrets: [OTHER, SECRET] });
    const payload = '{"eventId":"evt_rot"}';
    const ts = nowSeconds();
    const base = { 'webhook-id': 'msg_rot', 'webhook-timestamp': String(ts) };
    const byOld = reference.sign('msg_rot', new Date(ts * 1000), payload);
    const byNew = new Webhook(OTHER).sign('msg_rot', new Date(ts * 1000), payload);
    expect(rotating.verify({ headers: { ...base, 'webhook-signature': byOld }, rawBody: bytes(payload) }).matchedSecretIndex).toBe(1);
    expect(rotating.verify({ headers: { ...base, 'webhook-signature': byNew }, rawBody: bytes(payload) }).matchedSecretIndex).toBe(0);
    // A sender mid-rotation sends both signatures in one header.
    expect(
      rotating.verify({ headers: { ...base, 'webhook-signature': `${byOld} ${byNew}` }, rawBody: bytes(payload) }).matchedSecretIndex,
    ).toBe(0);
    expect(() => reference.verify(payload, rotating.sign({ rawBody: payload, secret: SECRET }))).not.toThrow();
    expect(() => new Webhook(OTHER).verify(payload, rotating.sign({ rawBody: payload }))).not.toThrow();
    expect(() => reference.verify(payload, rotating.sign({ rawBody: payload }))).toThrow(/No matching signature/);
  });

  it('several secrets: whichever the package used is found', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.uint8Array({ minLength: 24, maxLength: 32 }), {
          minLength: 2,
          maxLength: 4,
          selector: (k) => Buffer.from(k).toString('hex'),
        }),
        fc.nat(),
        (keys, seed) => {
          const secrets = keys.map((key) => `whsec_${Buffer.from(key).toString('base64')}`);
          const index = seed % secrets.length;
          const payload = '{"a":1}';
          const headers = {
            'webhook-id': 'msg_k',
            'webhook-timestamp': String(NOW),
            'webhook-signature': new Webhook(secrets[index]!).sign('msg_k', new Date(NOW_MS), payload),
          };
          expect(
            createStandardWebhooksScheme({ secrets }).verify({ headers, rawBody: bytes(payload), now: NOW_MS }).matchedSecretIndex,
          ).toBe(index);
        },
      ),
      { numRuns: 50 },
    );
  });

  it('a secret without the whsec_ prefix is read as base64, as the package reads it (padded or not)', () => {
    const key = Buffer.from('0123456789abcdef0123456789abcde'); // 31 bytes: its base64 has padding
    const padded = key.toString('base64');
    const unpadded = padded.replace(/=+$/, '');
    expect(unpadded).not.toBe(padded);
    for (const secret of [padded, unpadded, `whsec_${padded}`, `whsec_${unpadded}`]) {
      const ours = createStandardWebhooksScheme({ secrets: secret }).sign({ rawBody: '{}', webhookId: 'msg_p', timestamp: NOW });
      expect(ours['webhook-signature']).toBe(new Webhook(secret).sign('msg_p', new Date(NOW_MS), '{}'));
      expect(ours['webhook-signature']).toBe(new Webhook(`whsec_${padded}`).sign('msg_p', new Date(NOW_MS), '{}'));
    }
  });

  it('refuses a secret that is not base64, where the package also fails or silently drops a character', () => {
    for (const secret of ['whsec_not base64!', 'whsec_abc-_def', 'not base64 at all']) {
      expect(() => new Webhook(secret)).toThrow();
      expect(() => createStandardWebhooksScheme({ secrets: secret })).toThrow(/"whsec_" followed by base64/);
    }
    // Five characters: the package ignores the last one; we refuse rather than guess.
    expect(() => new Webhook('whsec_YWJjZ')).not.toThrow();
    expect(() => createStandardWebhooksScheme({ secrets: 'whsec_YWJjZ' })).toThrow(/base64/);
  });

  it('signs and verifies bodies that are not UTF-8 over their bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 512 }), msgId, (body, id) => {
        const headers = scheme.sign({ rawBody: body, webhookId: id, timestamp: NOW });
        expect(scheme.verify({ headers, rawBody: body, now: NOW_MS }).webhookId).toBe(id);
      }),
    );
  });

  it('ignores entries of other versions (v1a, v2) and reads entries separated by several spaces', () => {
    const headers = scheme.sign({ rawBody: '{}', webhookId: 'msg_v', timestamp: NOW });
    const v1 = headers['webhook-signature']!;
    const b64 = v1.slice('v1,'.length);
    const withOthers = { ...headers, 'webhook-signature': `v1a,${b64}  v2,${b64} ${v1}` };
    expect(scheme.verify({ headers: withOthers, rawBody: bytes('{}'), now: NOW_MS }).timestamp).toBe(NOW);
    const onlyOthers = { ...headers, 'webhook-signature': `v1a,${b64} v2,${b64}` };
    expect(failure(() => scheme.verify({ headers: onlyOthers, rawBody: bytes('{}'), now: NOW_MS })).reason).toBe('malformed_header');
  });

  it('a missing webhook-id, another message id, a changed body, a stale timestamp', () => {
    const payload = bytes('{}');
    const headers = scheme.sign({ rawBody: payload, webhookId: 'msg_a', timestamp: NOW });
    const { 'webhook-id': _id, ...withoutId } = headers;
    const missing = failure(() => scheme.verify({ headers: withoutId, rawBody: payload, now: NOW_MS }));
    expect([missing.reason, missing.message]).toEqual(['missing_header', 'payhooks: The webhook-id header is missing.']);
    expect(failure(() => scheme.verify({ headers: { ...headers, 'webhook-id': 'msg_b' }, rawBody: payload, now: NOW_MS })).reason).toBe(
      'no_matching_signature',
    );
    expect(failure(() => scheme.verify({ headers, rawBody: bytes('{ }'), now: NOW_MS })).reason).toBe('no_matching_signature');
    expect(failure(() => scheme.verify({ headers, rawBody: payload, now: NOW_MS + 301_000 })).reason).toBe('timestamp_too_old');
    expect(failure(() => scheme.verify({ headers, rawBody: payload, now: NOW_MS - 301_000 })).reason).toBe('timestamp_in_future');
    expect(scheme.verify({ headers, rawBody: payload, now: NOW_MS + 300_000 }).timestamp).toBe(NOW);
  });

  it('flipping any single bit of the signature bytes fails', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.integer({ min: 0, max: 255 }), (body, bit) => {
        const headers = scheme.sign({ rawBody: body, webhookId: 'msg_f', timestamp: NOW });
        const signature = Buffer.from(headers['webhook-signature']!.slice('v1,'.length), 'base64');
        signature[bit >> 3]! ^= 1 << (bit & 7);
        const tampered = { ...headers, 'webhook-signature': `v1,${signature.toString('base64')}` };
        expect(failure(() => scheme.verify({ headers: tampered, rawBody: body, now: NOW_MS })).reason).toBe('no_matching_signature');
      }),
    );
  });
});

describe('the published Standard Webhooks test vector', () => {
  // From the reference libraries' own tests (Go webhook_test.go TestWebhookSign, Python test_sign_function).
  const vector = {
    secret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
    timestamp: 1614265330,
    payload: '{"test": 2432232314}',
    signature: 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=',
  };
  const headers = { 'webhook-id': vector.id, 'webhook-timestamp': String(vector.timestamp), 'webhook-signature': vector.signature };
  const at = vector.timestamp * 1000;

  it('signs to the published signature, as the standardwebhooks package does, with or without the whsec_ prefix', () => {
    expect(new Webhook(vector.secret).sign(vector.id, new Date(at), vector.payload)).toBe(vector.signature);
    for (const secret of [vector.secret, vector.secret.slice('whsec_'.length)]) {
      expect(
        createStandardWebhooksScheme({ secrets: secret }).sign({
          rawBody: vector.payload,
          webhookId: vector.id,
          timestamp: vector.timestamp,
        }),
      ).toEqual(headers);
    }
  });

  it('verifies the published delivery, and refuses the published invalid signatures', () => {
    const scheme = createStandardWebhooksScheme({ secrets: vector.secret });
    expect(scheme.verify({ headers, rawBody: bytes(vector.payload), now: at })).toEqual({
      timestamp: vector.timestamp,
      webhookId: vector.id,
      matchedSecretIndex: 0,
    });
    for (const invalid of ['v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=', 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=']) {
      expect(
        failure(() => scheme.verify({ headers: { ...headers, 'webhook-signature': invalid }, rawBody: bytes(vector.payload), now: at }))
          .reason,
      ).toBe('no_matching_signature');
    }
    // The references' multi-signature case: a bad v1, a v2, the valid one, another bad v1.
    const multi = [
      'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
      'v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
      vector.signature,
      'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=',
    ].join(' ');
    expect(scheme.verify({ headers: { ...headers, 'webhook-signature': multi }, rawBody: bytes(vector.payload), now: at }).webhookId).toBe(
      vector.id,
    );
  });
});

describe('the Standard Webhooks preset: age to the millisecond', () => {
  const scheme = createStandardWebhooksScheme({ secrets: SECRET });
  const reference = new Webhook(SECRET);
  const payload = '{"eventId":"evt_age"}';
  const headers = {
    'webhook-id': 'msg_age',
    'webhook-timestamp': String(NOW),
    'webhook-signature': reference.sign('msg_age', new Date(NOW_MS), payload),
  };
  const verifyAt = (now: number) => scheme.verify({ headers, rawBody: bytes(payload), now });

  // The Go, Python and C# libraries compare times, not whole seconds: now - timestamp > 5 min is too old. (The
  // JavaScript package rounds now down to the second, so it alone would still accept 300.5 s.)
  it('refuses a delivery exactly 300.5 s old, accepts one 299.5 s old and one exactly 300 s old', () => {
    const old = failure(() => verifyAt(NOW_MS + 300_500));
    expect(old.reason).toBe('timestamp_too_old');
    expect(old.message).toMatch(/\(1700000000\) is 300\.5 s old, over the tolerance of 300 s/);
    expect(verifyAt(NOW_MS + 299_500).webhookId).toBe('msg_age');
    expect(verifyAt(NOW_MS + 300_000).webhookId).toBe('msg_age');
  });

  it('refuses one 300.5 s in the future and accepts one 299.5 s ahead', () => {
    expect(failure(() => verifyAt(NOW_MS - 300_500)).reason).toBe('timestamp_in_future');
    expect(verifyAt(NOW_MS - 299_500).webhookId).toBe('msg_age');
  });
});

describe('the Standard Webhooks preset: svix-* headers (senders built on Svix)', () => {
  const scheme = createStandardWebhooksScheme({ secrets: SECRET });
  const reference = new Webhook(SECRET);
  const payload = '{"eventId":"evt_svix"}';
  const svixHeaders = (id: string, seconds: number, body: string, webhook = reference) => ({
    'svix-id': id,
    'svix-timestamp': String(seconds),
    'svix-signature': webhook.sign(id, new Date(seconds * 1000), body),
  });

  it('verifies what the standardwebhooks package signs, sent under svix-* names', () => {
    fc.assert(
      fc.property(fc.json(), msgId, fc.integer({ min: -300, max: 300 }), (body, id, offset) => {
        const headers = svixHeaders(id, NOW + offset, body);
        expect(scheme.verify({ headers, rawBody: bytes(body), now: NOW_MS })).toEqual({
          timestamp: NOW + offset,
          webhookId: id,
          matchedSecretIndex: 0,
        });
      }),
      { numRuns: 50 },
    );
  });

  it('fails svix-* deliveries for the same reasons, naming the svix-* header', () => {
    const headers = svixHeaders('msg_s', NOW, payload);
    const { 'svix-signature': _signature, ...unsigned } = headers;
    const missing = failure(() => scheme.verify({ headers: unsigned, rawBody: bytes(payload), now: NOW_MS }));
    expect([missing.reason, missing.message]).toEqual(['missing_header', 'payhooks: The svix-signature header is missing.']);
    expect(failure(() => scheme.verify({ headers: { ...headers, 'svix-id': 'msg_t' }, rawBody: bytes(payload), now: NOW_MS })).reason).toBe(
      'no_matching_signature',
    );
    const stale = failure(() => scheme.verify({ headers, rawBody: bytes(payload), now: NOW_MS + 300_500 }));
    expect([stale.reason, stale.message]).toEqual([
      'timestamp_too_old',
      expect.stringMatching(/^payhooks: The svix-timestamp header \(1700000000\) is 300\.5 s old/),
    ]);
  });

  it('prefers webhook-* when both sets are present, and never mixes the two', () => {
    const valid = scheme.sign({ rawBody: payload, webhookId: 'msg_w', timestamp: NOW });
    const svix = svixHeaders('msg_x', NOW, payload);
    // Both valid: the webhook-* id is the one reported.
    expect(scheme.verify({ headers: { ...svix, ...valid }, rawBody: bytes(payload), now: NOW_MS }).webhookId).toBe('msg_w');
    // A bad webhook-* signature is not rescued by a good svix-* one.
    const badWebhook = { ...svix, ...valid, 'webhook-signature': svix['svix-signature'] };
    expect(failure(() => scheme.verify({ headers: badWebhook, rawBody: bytes(payload), now: NOW_MS })).reason).toBe(
      'no_matching_signature',
    );
    // One webhook-* header present selects the webhook-* set: the others are required under those names.
    const mixed = failure(() =>
      scheme.verify({
        headers: { 'webhook-id': 'msg_x', 'svix-timestamp': svix['svix-timestamp'], 'svix-signature': svix['svix-signature'] },
        rawBody: bytes(payload),
        now: NOW_MS,
      }),
    );
    expect([mixed.reason, mixed.message]).toEqual(['missing_header', 'payhooks: The webhook-timestamp header is missing.']);
  });

  it('signs with the webhook-* names, which the package verifies', () => {
    const headers = scheme.sign({ rawBody: payload });
    expect(Object.keys(headers).sort()).toEqual(['webhook-id', 'webhook-signature', 'webhook-timestamp']);
    expect(reference.verify(payload, headers)).toEqual(JSON.parse(payload));
  });
});
