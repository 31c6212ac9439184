import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  assertRawBody,
  createDefaultScheme,
  createHmacScheme,
  createStandardWebhooksScheme,
  WebhookVerificationError,
  type SignatureScheme,
  type VerificationFailureReason,
  type VerifyInput,
  parseSecretList,
} from '../../src/signature/index.js';
import { PayhooksError } from '../../src/errors.js';
import { bytes, failure, NOW, NOW_MS } from './support.js';

const SECRET = 'super-secret-signing-key-9f2c';
const scheme = createDefaultScheme({ secrets: SECRET });
const body = bytes('{"eventId":"evt_f","eventType":"INVOICE_PAID","data":{}}');
const signed = scheme.sign({ rawBody: body, timestamp: NOW });
const expectedHex = signed['x-webhook-signature']!.slice('v1='.length);
const otherHex = createDefaultScheme({ secrets: 'another-secret' }).sign({ rawBody: body, timestamp: NOW })['x-webhook-signature']!;

/** One targeted way to produce each reason from `verify`; `message` is what the log line must say. */
const verifyCases: { name: string; input: VerifyInput; reason: VerificationFailureReason; message: RegExp }[] = [
  {
    name: 'no timestamp header',
    input: { headers: { 'x-webhook-signature': signed['x-webhook-signature'] }, rawBody: body },
    reason: 'missing_header',
    message: /x-webhook-timestamp header is missing\.$/,
  },
  {
    name: 'no signature header',
    input: { headers: { 'x-webhook-timestamp': String(NOW) }, rawBody: body },
    reason: 'missing_header',
    message: /x-webhook-signature header is missing\.$/,
  },
  {
    name: 'an empty signature header',
    input: { headers: { ...signed, 'x-webhook-signature': '  ' }, rawBody: body },
    reason: 'missing_header',
    message: /x-webhook-signature header is missing \(present but empty\)/,
  },
  {
    name: 'an empty repeated header',
    input: { headers: { ...signed, 'x-webhook-timestamp': [] }, rawBody: body },
    reason: 'missing_header',
    message: /x-webhook-timestamp header is missing/,
  },
  {
    name: 'a timestamp that is not a number',
    input: { headers: { ...signed, 'x-webhook-timestamp': 'yesterday' }, rawBody: body },
    reason: 'malformed_header',
    message: /x-webhook-timestamp header is not a unix timestamp .*got "yesterday"/,
  },
  {
    name: 'a fractional timestamp',
    input: { headers: { ...signed, 'x-webhook-timestamp': '1700000000.5' }, rawBody: body },
    reason: 'malformed_header',
    message: /not a unix timestamp/,
  },
  {
    name: 'a negative timestamp',
    input: { headers: { ...signed, 'x-webhook-timestamp': '-1700000000' }, rawBody: body },
    reason: 'malformed_header',
    message: /not a unix timestamp/,
  },
  {
    name: 'a signature that is not hex',
    input: { headers: { ...signed, 'x-webhook-signature': 'v1=not-hex!' }, rawBody: body },
    reason: 'malformed_header',
    message: /holds no hex signature that the default scheme can read: got "v1=not-hex!"\.$/,
  },
  {
    name: 'hex of odd length',
    input: { headers: { ...signed, 'x-webhook-signature': `v1=${expectedHex.slice(1)}` }, rawBody: body },
    reason: 'malformed_header',
    message: /holds no hex signature/,
  },
  {
    name: 'a signature of another secret',
    input: { headers: { ...signed, 'x-webhook-signature': otherHex }, rawBody: body },
    reason: 'no_matching_signature',
    message: /None of the 1 signature in x-webhook-signature matches/,
  },
  {
    name: 'a truncated signature',
    input: { headers: { ...signed, 'x-webhook-signature': `v1=${expectedHex.slice(0, 62)}` }, rawBody: body },
    reason: 'no_matching_signature',
    message: /matches the 56 bytes of the body/,
  },
  {
    name: 'a re-serialised body',
    input: { headers: signed, rawBody: bytes(JSON.stringify(JSON.parse(body.toString()), null, 2)) },
    reason: 'no_matching_signature',
    message: /byte for byte unchanged/,
  },
  {
    name: 'a stale timestamp',
    input: { headers: scheme.sign({ rawBody: body, timestamp: NOW - 3600 }), rawBody: body },
    reason: 'timestamp_too_old',
    message: /\(1699996400\) is 3600 s old, over the tolerance of 300 s/,
  },
  {
    name: 'a timestamp in the future',
    input: { headers: scheme.sign({ rawBody: body, timestamp: NOW + 900 }), rawBody: body },
    reason: 'timestamp_in_future',
    message: /is 900 s in the future, over the tolerance of 300 s/,
  },
  {
    name: 'a parsed body',
    input: { headers: signed, rawBody: JSON.parse(body.toString()) as Uint8Array },
    reason: 'body_already_parsed',
    message: /as a parsed object/,
  },
  {
    name: 'a body decoded to a string',
    input: { headers: signed, rawBody: body.toString() as unknown as Uint8Array },
    reason: 'body_already_parsed',
    message: /as a string/,
  },
];

describe('each failure reason, with a precise message', () => {
  it.each(verifyCases)('$name: $reason', ({ input, reason, message }) => {
    const error = failure(() => scheme.verify({ now: NOW_MS, ...input }));
    expect(error).toBeInstanceOf(WebhookVerificationError);
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe('WebhookVerificationError');
    expect(error.reason).toBe(reason);
    expect(error.message).toMatch(message);
    expect(error.publicMessage).toBe('Invalid webhook signature.');
    expect(error.message).not.toContain(SECRET);
    expect(error.message).not.toContain(expectedHex);
  });

  it('covers every reason', () => {
    const reasons = new Set<VerificationFailureReason>(verifyCases.map((c) => c.reason));
    // Every reason is about a delivery: a configuration mistake is a TypeError when the scheme is built (below).
    expect([...reasons].sort()).toEqual([
      'body_already_parsed',
      'malformed_header',
      'missing_header',
      'no_matching_signature',
      'timestamp_in_future',
      'timestamp_too_old',
    ]);
  });

  it('is a PayhooksError: its message starts with "payhooks: "', () => {
    const error = failure(() => scheme.verify({ headers: {}, rawBody: body, now: NOW_MS }));
    expect(error).toBeInstanceOf(PayhooksError);
    expect(error.message).toBe('payhooks: The x-webhook-timestamp header is missing.');
  });

  it('no_matching_signature explains what to check', () => {
    const { message } = failure(() =>
      scheme.verify({ headers: { ...signed, 'x-webhook-signature': otherHex }, rawBody: body, now: NOW_MS }),
    );
    expect(message).toMatch(/raw request body reaches the verifier byte for byte unchanged/);
    expect(message).toMatch(/no JSON parsing and re-serialising/);
    expect(message).toMatch(/no body parser such as express\.json\(\) before the webhook middleware/);
    expect(message).toMatch(/this endpoint's signing secret \(GET \/v1\/webhooks\/\{id\}\/secret/);
  });

  it('a stale timestamp is reported only for a valid signature; a forged one is no_matching_signature', () => {
    const stale = scheme.sign({ rawBody: body, timestamp: NOW - 3600 });
    const forged = { ...stale, 'x-webhook-signature': otherHex };
    expect(failure(() => scheme.verify({ headers: forged, rawBody: body, now: NOW_MS })).reason).toBe('no_matching_signature');
  });

  it('quotes attacker-controlled header text safely and briefly', () => {
    const { message } = failure(() =>
      scheme.verify({ headers: { ...signed, 'x-webhook-timestamp': `1\n${'9'.repeat(100)}` }, rawBody: body, now: NOW_MS }),
    );
    expect(message).not.toContain('\n');
    expect(message).toContain('"1\\n99999');
    expect(message.length).toBeLessThan(200);
  });

  it('publicMessage is generic, also as a static', () => {
    expect(WebhookVerificationError.publicMessage).toBe('Invalid webhook signature.');
  });

  it('keeps a cause', () => {
    const cause = new Error('inner');
    expect(new WebhookVerificationError('malformed_header', 'outer', { cause }).cause).toBe(cause);
  });
});

describe('no message ever holds a secret or an expected signature', () => {
  const secretArb = fc.string({ minLength: 12, maxLength: 40, unit: 'grapheme' }).filter((s) => s.trim() !== '');

  /** Fails `s` in every way verify can, starting from a valid delivery `good`. */
  function everyFailure(s: SignatureScheme, good: Record<string, string>, payload: Uint8Array): WebhookVerificationError[] {
    const [tsName, sigName] =
      s.name === 'standard-webhooks' ? ['webhook-timestamp', 'webhook-signature'] : ['x-webhook-timestamp', 'x-webhook-signature'];
    const attempts: (() => unknown)[] = [
      () => s.verify({ headers: {}, rawBody: payload, now: NOW_MS }),
      () => s.verify({ headers: { ...good, [sigName!]: undefined }, rawBody: payload, now: NOW_MS }),
      () => s.verify({ headers: { ...good, [tsName!]: 'x' }, rawBody: payload, now: NOW_MS }),
      () => s.verify({ headers: { ...good, [sigName!]: '%%%' }, rawBody: payload, now: NOW_MS }),
      () => s.verify({ headers: good, rawBody: Buffer.concat([payload, bytes(' ')]), now: NOW_MS }),
      () => s.verify({ headers: good, rawBody: payload, now: NOW_MS + 10_000_000 }),
      () => s.verify({ headers: good, rawBody: payload, now: NOW_MS - 10_000_000 }),
      () => s.verify({ headers: good, rawBody: {} as Uint8Array, now: NOW_MS }),
    ];
    return attempts.map(failure);
  }

  it('for the default scheme, with one to three secrets', () => {
    fc.assert(
      fc.property(fc.uniqueArray(secretArb, { minLength: 1, maxLength: 3 }), fc.uint8Array({ maxLength: 64 }), (secrets, payload) => {
        const rotating = createDefaultScheme({ secrets });
        const expected = secrets.map((secret) =>
          rotating.sign({ rawBody: payload, timestamp: NOW, secret })['x-webhook-signature']!.slice('v1='.length),
        );
        const errors = everyFailure(rotating, rotating.sign({ rawBody: payload, timestamp: NOW }), payload);
        expect(new Set(errors.map((e) => e.reason)).size).toBe(6); // every reason
        for (const error of errors) {
          for (const secret of secrets) expect(error.message).not.toContain(secret);
          for (const hex of expected) expect(error.message).not.toContain(hex);
        }
      }),
      { numRuns: 50 },
    );
  });

  it('for the Standard Webhooks preset (neither the secret nor its key bytes in base64)', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 16, maxLength: 40 }), fc.uint8Array({ maxLength: 64 }), (key, payload) => {
        const encoded = Buffer.from(key).toString('base64');
        const preset = createStandardWebhooksScheme({ secrets: `whsec_${encoded}` });
        const good = preset.sign({ rawBody: payload, timestamp: NOW, webhookId: 'msg_1' });
        const expected = good['webhook-signature']!.slice('v1,'.length);
        for (const error of everyFailure(preset, good, payload)) {
          expect(error.message).not.toContain(encoded);
          expect(error.message).not.toContain(expected);
        }
      }),
      { numRuns: 50 },
    );
  });
});

describe('assertRawBody', () => {
  it('passes raw bytes (Buffer, Uint8Array)', () => {
    expect(() => assertRawBody(Buffer.from('{}'))).not.toThrow();
    expect(() => assertRawBody(new Uint8Array([1, 2]))).not.toThrow();
  });

  it.each([
    ['a parsed object', { eventId: 'x' }, /as a parsed object: a JSON body parser \(express\.json\(\)/],
    ['a string', '{"eventId":"x"}', /as a string/],
    ['undefined', undefined, /as undefined \(nothing read the request body/],
    ['null', null, /as null/],
    ['an ArrayBuffer', new ArrayBuffer(2), /new Uint8Array\(arrayBuffer\)/],
    ['a DataView', new DataView(new ArrayBuffer(2)), /as a DataView/],
    ['a number', 42, /as a number/],
  ])('refuses %s with body_already_parsed and says how to mount the middleware', (_name, value, message) => {
    const error = failure(() => assertRawBody(value));
    expect(error.reason).toBe('body_already_parsed');
    expect(error.message).toMatch(message);
    expect(error.message).toMatch(/mount it before any body parser/);
    expect(error.message).toMatch(/express\.raw\(\{ type: "application\/json" \}\)/);
  });
});

describe('options are validated with clear errors', () => {
  /** Runs `fn`, which must throw a TypeError (a configuration mistake, never a WebhookVerificationError), and returns it. */
  function configError(fn: () => unknown): TypeError {
    try {
      fn();
    } catch (err) {
      expect(err).toBeInstanceOf(TypeError);
      expect(err).not.toBeInstanceOf(WebhookVerificationError);
      return err as TypeError;
    }
    throw new Error('expected a TypeError, but nothing was thrown');
  }

  it('no secret at all, or only empty ones, is a TypeError at construction, for every scheme', () => {
    const noSecret = /^No webhook signing secret is configured: pass this endpoint's secret \(GET \/v1\/webhooks\/\{id\}\/secret\)/;
    const base = { timestampHeader: 'x-t', signatureHeader: 'x-s', encoding: 'hex' as const, signedContent: () => bytes('') };
    for (const secrets of [[], '', '   ', ' , ,', ['', '  ']]) {
      expect(configError(() => createDefaultScheme({ secrets })).message).toMatch(noSecret);
      expect(configError(() => createStandardWebhooksScheme({ secrets })).message).toMatch(noSecret);
      expect(configError(() => createHmacScheme({ ...base, secrets })).message).toMatch(noSecret);
    }
  });

  it('secrets that are not a string or an array of strings are a TypeError naming the bad item', () => {
    expect(configError(() => createDefaultScheme({ secrets: undefined as unknown as string })).message).toBe(
      'The webhook secrets must be a string (several separated by commas) or an array of strings, not undefined.',
    );
    expect(configError(() => createDefaultScheme({ secrets: { s: 1 } as unknown as string })).message).toMatch(/not an object\.$/);
    expect(configError(() => createDefaultScheme({ secrets: ['ok', 7 as unknown as string] })).message).toBe(
      'Webhook secret #2 of 2 is a number, not a string.',
    );
    expect(configError(() => createDefaultScheme({ secrets: [null as unknown as string] })).message).toBe(
      'Webhook secret #1 of 1 is null, not a string.',
    );
    expect(configError(() => createStandardWebhooksScheme({ secrets: 'whsec_' })).message).toBe('Secret #1 of 1 gives an empty HMAC key.');
  });

  it('signing with an empty secret is a TypeError', () => {
    expect(configError(() => scheme.sign({ rawBody: body, secret: '' })).message).toMatch(
      /secret passed to sign\(\) must be a non-empty string/,
    );
    expect(configError(() => scheme.sign({ rawBody: body, secret: '  ' })).message).toMatch(/must be a non-empty string/);
  });

  it('createDefaultScheme reads secrets as parseSecretList does: a comma-separated string is a rotation, empties are dropped', () => {
    const payload = bytes('{}');
    const byOld = createDefaultScheme({ secrets: 'old' }).sign({ rawBody: payload, timestamp: NOW });
    for (const secrets of ['new,old', ' new , old ', 'new,,old,', ['new', 'old'], [' new', '', 'old ']]) {
      expect(parseSecretList(secrets)).toEqual(['new', 'old']);
      const rotating = createDefaultScheme({ secrets });
      expect(rotating.verify({ headers: byOld, rawBody: payload, now: NOW_MS }).matchedSecretIndex).toBe(1);
      expect(rotating.sign({ rawBody: payload, timestamp: NOW })).toEqual(
        createDefaultScheme({ secrets: 'new' }).sign({ rawBody: payload, timestamp: NOW }),
      );
      // A secret given to sign() is read the same way, trimmed.
      expect(rotating.sign({ rawBody: payload, timestamp: NOW, secret: ' old ' })).toEqual(byOld);
    }
    // An array item is one secret even if it holds a comma; only a string is split.
    expect(parseSecretList(['a,b'])).toEqual(['a,b']);
  });

  it.each([0, -5, Number.NaN, Number.POSITIVE_INFINITY])('toleranceSeconds %s is refused', (toleranceSeconds) => {
    expect(() => createDefaultScheme({ secrets: 's', toleranceSeconds })).toThrow(RangeError);
    expect(() => createDefaultScheme({ secrets: 's', toleranceSeconds })).toThrow(/toleranceSeconds must be a positive number of seconds/);
  });

  it('header names, encoding and signedContent of a custom scheme', () => {
    const base = { secrets: 's', timestampHeader: 'x-t', signatureHeader: 'x-s', encoding: 'hex' as const, signedContent: () => bytes('') };
    expect(() => createHmacScheme({ ...base, signatureHeader: 'x s' })).toThrow(/signatureHeader must be an HTTP header name/);
    expect(() => createHmacScheme({ ...base, signatureHeader: '' })).toThrow(/signatureHeader must be an HTTP header name/);
    expect(() => createHmacScheme({ ...base, signatureHeader: 'X-T' })).toThrow(/header names must differ/);
    expect(() => createHmacScheme({ ...base, encoding: 'base32' as 'hex' })).toThrow(/encoding must be 'hex' or 'base64'/);
    expect(() => createHmacScheme({ ...base, signedContent: undefined as unknown as () => Uint8Array })).toThrow(
      /signedContent must be a function/,
    );
  });

  it('sign refuses a timestamp that is not whole seconds and a body that is not text or bytes', () => {
    expect(() => scheme.sign({ rawBody: body, timestamp: 1.5 })).toThrow(/whole, non-negative number of unix seconds/);
    expect(() => scheme.sign({ rawBody: body, timestamp: -1 })).toThrow(TypeError);
    expect(() => scheme.sign({ rawBody: {} as Uint8Array })).toThrow(/rawBody must be a string or a Uint8Array/);
  });

  it('verify refuses an invalid now', () => {
    expect(() => scheme.verify({ headers: signed, rawBody: body, now: new Date('nope') })).toThrow(/now must be a valid Date/);
  });
});
