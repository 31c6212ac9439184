/** Why a delivery failed verification (also logged by the receiver). */
export type VerificationFailureReason =
  | 'missing_header'
  | 'malformed_header'
  | 'timestamp_too_old'
  | 'timestamp_in_future'
  | 'no_matching_signature'
  | 'body_already_parsed';

import { PayhooksError } from '../errors.js';

/**
 * The one error of this module, thrown for a delivery that fails verification (never for a configuration
 * mistake: those are TypeError or RangeError when the scheme is built). `message` is precise and meant for logs; `publicMessage` is the generic text an
 * HTTP answer may carry, so that a prober learns nothing about which check failed. Neither ever holds a secret or
 * an expected signature.
 *
 * @example
 * try {
 *   scheme.verify({ headers, rawBody });
 * } catch (err) {
 *   if (!(err instanceof WebhookVerificationError)) throw err;
 *   log.warn({ reason: err.reason }, err.message);
 *   return { status: 401, body: { error: { message: err.publicMessage } } };
 * }
 */
export class WebhookVerificationError extends PayhooksError {
  /** The text to send back to the caller, whatever the reason. */
  static readonly publicMessage = 'Invalid webhook signature.';

  readonly reason: VerificationFailureReason;
  readonly publicMessage: string = WebhookVerificationError.publicMessage;

  constructor(reason: VerificationFailureReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'WebhookVerificationError';
    this.reason = reason;
  }
}
