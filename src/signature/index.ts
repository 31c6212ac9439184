export { assertRawBody } from './assert-raw-body.js';
export { createDefaultScheme, type DefaultSchemeOptions } from './default-scheme.js';
export { WebhookVerificationError, type VerificationFailureReason } from './errors.js';
export { createHmacScheme, DEFAULT_TOLERANCE_SECONDS, type HeaderNames, type HmacSchemeOptions, type SignedParts } from './hmac-scheme.js';
export { parseSecretList } from './secret-list.js';
export { SIMULATED_TIME_HEADER, withSimulatedClock } from './simulated-clock.js';
export { createStandardWebhooksScheme, type StandardWebhooksSchemeOptions } from './standard-webhooks-scheme.js';
export type { HeaderMap, SignatureScheme, SignInput, VerifiedDelivery, VerifyInput } from './types.js';
