/** Why a delivery failed verification. */
export type VerificationFailureReason =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_too_old'
  | 'timestamp_in_future'
  | 'no_matching_signature'
  | 'body_already_parsed'
  | 'no_secret';

/**
 * A delivery that did not verify. `message` is precise, for logs; `publicMessage` is what an HTTP answer
 * may say without helping an attacker. Neither ever contains a secret or an expected signature.
 */
export class WebhookVerificationError extends Error {
  readonly publicMessage = 'Invalid webhook signature.';

  constructor(
    readonly reason: VerificationFailureReason,
    message: string,
  ) {
    super(message);
    this.name = 'WebhookVerificationError';
  }
}

/**
 * Throws `body_already_parsed` unless `body` is raw bytes: the signature covers the exact bytes, and a
 * body parser that ran first has turned them into an object or a string.
 */
export function assertRawBody(body: unknown): asserts body is Uint8Array {
  if (body instanceof Uint8Array) return;
  throw new WebhookVerificationError(
    'body_already_parsed',
    `The request body reached the verifier as ${body === null ? 'null' : typeof body}, not as raw bytes: a body parser ran first. ` +
      'Give the webhook route the unparsed body (mount it before express.json(), or use express.raw()).',
  );
}
