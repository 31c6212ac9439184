/** Request headers with lower-case names; a header that was repeated may hold several values. */
export type HeaderMap = Readonly<Record<string, string | readonly string[] | undefined>>;

/** What {@link SignatureScheme.verify} checks. */
export interface VerifyInput {
  headers: HeaderMap;
  /** The exact bytes received (a `Buffer` is fine). Never a decoded string or a parsed object. */
  rawBody: Uint8Array;
  /** The current time, as a Date or ms since the epoch. Default `Date.now()`. */
  now?: Date | number | undefined;
}

/** What a successful verification tells. */
export interface VerifiedDelivery {
  /** The delivery's timestamp in unix seconds (a millisecond header value is converted). */
  timestamp: number;
  /** The delivery id header, for schemes that sign one (Standard Webhooks' `webhook-id`). */
  webhookId?: string | undefined;
  /** Which configured secret matched (0 = the first): once the old secret stops matching, a rotation is complete. */
  matchedSecretIndex: number;
}

/** What {@link SignatureScheme.sign} signs. */
export interface SignInput {
  /** The body exactly as it will be sent; a string is encoded as UTF-8. */
  rawBody: Uint8Array | string;
  /** Unix seconds. Default now. (Milliseconds also work: the value is sent as written and recognised on verify.) */
  timestamp?: number | undefined;
  /** The delivery id, for schemes that sign one. Default a random `msg_…` id. */
  webhookId?: string | undefined;
  /** The secret to sign with. Default the first configured. */
  secret?: string | undefined;
}

/** A way of signing deliveries: the default scheme, Standard Webhooks, or one built with `createHmacScheme`. */
export interface SignatureScheme {
  readonly name: string;
  /** Lower-case names of the headers this scheme reads (the receiver keeps them with the event). */
  readonly headerNames: readonly string[];
  /** Checks a delivery; throws {@link WebhookVerificationError} when it does not pass (never returns false). */
  verify(input: VerifyInput): VerifiedDelivery;
  /** The headers to send with `rawBody` (tests, the simulator and `payhooks trigger` use it). */
  sign(input: SignInput): Record<string, string>;
}
