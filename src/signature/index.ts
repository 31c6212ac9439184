export { createDefaultScheme, type DefaultSchemeOptions } from './default-scheme.js';
export { assertRawBody, WebhookVerificationError, type VerificationFailureReason } from './errors.js';
export { createHmacScheme, type HmacSchemeOptions, type SignedParts } from './hmac-scheme.js';
export { createStandardWebhooksScheme, type StandardWebhooksSchemeOptions } from './standard-webhooks-scheme.js';
export type { HeaderMap, SignatureScheme, SignInput, VerifiedDelivery, VerifyInput } from './types.js';
