import fc from 'fast-check';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { createStandardWebhooksScheme } from '../../src/signature/index.js';

const SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const OTHER = 'whsec_' + Buffer.from('another 24 byte secret..').toString('base64');

describe('the Standard Webhooks preset against the standardwebhooks package', () => {
  const scheme = createStandardWebhooksScheme({ secrets: [SECRET] });
  const reference = new Webhook(SECRET);

  it('verifies what the package signs', () => {
    fc.assert(
      fc.property(fc.json(), fc.stringMatching(/^msg_[A-Za-z0-9]{1,20}$/), (payload, id) => {
        const timestamp = new Date(Math.floor(Date.now() / 1000) * 1000);
        const signature = reference.sign(id, timestamp, payload);
        const headers = { 'webhook-id': id, 'webhook-timestamp': String(timestamp.getTime() / 1000), 'webhook-signature': signature };
        expect(scheme.verify({ headers, rawBody: Buffer.from(payload, 'utf8') }).webhookId).toBe(id);
      }),
      { numRuns: 50 },
    );
  });

  it('is verified by the package', () => {
    fc.assert(
      fc.property(fc.json(), (payload) => {
        const headers = scheme.sign({ rawBody: payload });
        expect(() => reference.verify(payload, headers)).not.toThrow();
      }),
      { numRuns: 50 },
    );
  });

  it('rotation: either secret verifies, and the package agrees with each', () => {
    const rotating = createStandardWebhooksScheme({ secrets: [OTHER, SECRET] });
    const payload = '{"eventId":"evt_rot"}';
    const signedByOld = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)) };
    const oldSig = reference.sign('msg_1', new Date(Number(signedByOld['webhook-timestamp']) * 1000), payload);
    const newSig = new Webhook(OTHER).sign('msg_1', new Date(Number(signedByOld['webhook-timestamp']) * 1000), payload);
    const both = { ...signedByOld, 'webhook-signature': `${newSig} ${oldSig}` };
    expect(rotating.verify({ headers: both, rawBody: Buffer.from(payload) }).matchedSecretIndex).toBe(0);
    expect(rotating.verify({ headers: { ...signedByOld, 'webhook-signature': oldSig }, rawBody: Buffer.from(payload) }).matchedSecretIndex).toBe(1);
    const headers = rotating.sign({ rawBody: payload, secret: SECRET });
    expect(() => reference.verify(payload, headers)).not.toThrow();
  });

  it('refuses a missing webhook-id, and a signature of another message id', () => {
    const payload = '{}';
    const headers = scheme.sign({ rawBody: payload, webhookId: 'msg_a' });
    const { 'webhook-id': _id, ...withoutId } = headers;
    expect(() => scheme.verify({ headers: withoutId, rawBody: Buffer.from(payload) })).toThrow(/webhook-id header is missing/);
    expect(() => scheme.verify({ headers: { ...headers, 'webhook-id': 'msg_b' }, rawBody: Buffer.from(payload) })).toThrow(/No signature/);
  });

  it('takes secrets with or without the whsec_ prefix, as the package does, and refuses non-base64 ones', () => {
    const bare = createStandardWebhooksScheme({ secrets: [SECRET.slice('whsec_'.length)] });
    expect(() => reference.verify('{}', bare.sign({ rawBody: '{}' }))).not.toThrow();
    expect(() => createStandardWebhooksScheme({ secrets: ['whsec_not base64!'] })).toThrow(/base64/);
  });
});
