import { createDefaultScheme } from '../signature/index.js';

export { SIMULATED_TIME_HEADER } from '../signature/index.js';

/**
 * The headers of one delivery signed with the default scheme: `X-Webhook-Timestamp` and one `v1=<hex>` per
 * secret in `X-Webhook-Signature`, space-separated, the newest secret first. During a rotation's grace period
 * both the new and the old secret sign, so a receiver configured with either one verifies.
 *
 * @example
 * signDelivery('{"eventId":"evt_1",…}', ['new-secret', 'old-secret']);
 * // { 'x-webhook-timestamp': '1767225600', 'x-webhook-signature': 'v1=3f… v1=9a…' }
 */
export function signDelivery(
  rawBody: string,
  secrets: readonly string[],
  timestamp = Math.floor(Date.now() / 1000),
): Record<string, string> {
  const scheme = createDefaultScheme({ secrets });
  const signed = secrets.map((secret) => scheme.sign({ rawBody, timestamp, secret }));
  return {
    'x-webhook-timestamp': String(timestamp),
    'x-webhook-signature': signed.map((headers) => headers['x-webhook-signature']).join(' '),
  };
}
